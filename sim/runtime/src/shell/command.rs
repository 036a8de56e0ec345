//! Simple commands: assignments, redirections, the builtins the model knows (`exit`, `trap`,
//! `exec`, `export`, `unset`, `:`, `true`, `false`, `test`/`[`, `sleep`, `echo`, `printf`),
//! busybox's applets by name, the image's executables and script files by path.
//!
//! - `X=1` alone sets a shell variable; `X=1 cmd` puts it in `cmd`'s environment only;
//!   `export`ed variables reach child processes (`sh -c`, a script).
//! - A command name without `/` is a builtin or one of busybox's [`APPLETS`] (busybox's
//!   standalone shell runs them without a link); else `sh: NAME: not found`, 127. `touch`
//!   makes files; the other applets that change files ([`FILE_CHANGING_APPLETS`]) are beyond
//!   the model (the run ends with 2); the rest print nothing and end with 0.
//! - A path names one of the image's executables, or a file: run if its mode lets it (`sh:
//!   PATH: Permission denied`, 126, if not), by the interpreter of its `#!` line, or by `sh`
//!   without one; a directory is `Permission denied` too; anything else `sh: PATH: not found`,
//!   127.

use super::applets::{self, Lookup, Unmodelled, is_text_applet, reads_input};
use super::expand::{Scope, fields, single};
use super::parse::{Redirect, Simple};
use super::run::{Fds, Flow, Input, Machine, Shell, Sink, Trap};
use super::{APPLETS, Env, FILE_CHANGING_APPLETS, IMAGE_EXECUTABLES, STATUS_NOT_FOUND, clean_path, executable_name};

/// Simple commands one run may execute before the model calls it endless: a loop that never
/// repeats its state within this many steps is beyond the model.
const STEP_LIMIT: u64 = 100_000;

impl Machine<'_> {
    /// Run a process `argv` with environment `env`; `term_at`: when TERM reaches it (it is PID
    /// 1). Its status is in `Exit`.
    pub(super) fn process(&mut self, argv: &[String], term_at: Option<u64>, env: &Env) -> Flow {
        let Some((first, args)) = argv.split_first() else { return Flow::Exit(0) };
        if self.is_script_file(first) {
            return self.script_file(argv, term_at, env);
        }
        let name = executable_name(first);
        match name {
            "sh" => self.shell_process(first, args, term_at, env),
            "busybox" => match args.split_first() {
                Some((applet, _)) if APPLETS.contains(&executable_name(applet)) => self.process(args, term_at, env),
                Some((applet, _)) => {
                    self.write_err(&format!("{applet}: applet not found"));
                    Flow::Exit(STATUS_NOT_FOUND)
                }
                None => Flow::Exit(0),
            },
            "sleep" if sleep_duration(args).is_none() => Flow::Exit(1),
            "sleep" => match self.sleep(args) {
                Flow::Continue => Flow::Exit(0),
                other => other,
            },
            "false" => Flow::Exit(1),
            "touch" => self.touch(args),
            name if is_text_applet(name) => self.text_applet(name, args, false),
            // The model follows files: an applet that changes them without being modelled would
            // leave it wrong, so the run is beyond the model.
            name if FILE_CHANGING_APPLETS.contains(&name) => Flow::Unmodelled,
            _ => Flow::Exit(0),
        }
    }

    /// Whether `path` names a file of the container that is not one of the image's
    /// executables (a script).
    pub(super) fn is_script_file(&self, path: &str) -> bool {
        path.contains('/') && !is_image_executable(path) && matches!(self.files.lookup(path), Lookup::File(_))
    }

    pub(super) fn has_shebang(&self, path: &str) -> bool {
        matches!(self.files.lookup(path), Lookup::File(contents) if contents.starts_with("#!"))
    }

    /// A script file run by path: by the interpreter its `#!` line names (with its one
    /// argument), else by `sh`.
    fn script_file(&mut self, argv: &[String], term_at: Option<u64>, env: &Env) -> Flow {
        let Some((path, args)) = argv.split_first() else { return Flow::Exit(0) };
        let Lookup::File(contents) = self.files.lookup(path) else { return Flow::Exit(STATUS_NOT_FOUND) };
        let mut command: Vec<String> = match contents.strip_prefix("#!") {
            Some(rest) => rest.lines().next().unwrap_or_default().split_whitespace().map(str::to_string).collect(),
            None => vec!["/bin/sh".to_string()],
        };
        if command.first().is_none_or(|interpreter| !is_image_executable(interpreter)) {
            self.write_err(&format!("sh: {path}: not found"));
            return Flow::Exit(STATUS_NOT_FOUND);
        }
        command.push(path.clone());
        command.extend(args.iter().cloned());
        self.process(&command, term_at, env)
    }

    pub(super) fn simple(&mut self, shell: &mut Shell, simple: &Simple) -> Flow {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return match self.kill_at {
                Some(kill) => {
                    self.clock = self.clock.max(kill);
                    Flow::Killed
                }
                None => Flow::Forever,
            };
        }
        shell.arrive_by(self.clock);
        let scope = Scope { vars: &shell.vars, status: shell.status, args: &shell.args };
        let assignments: Vec<(String, String)> =
            simple.assignments.iter().map(|(name, value)| (name.clone(), single(value, &scope))).collect();
        let argv = fields(&simple.words, &scope);
        let fds = match self.redirect(simple, &scope) {
            Ok(fds) => fds,
            Err(message) => {
                self.write_err(&message);
                shell.status = 1;
                return self.deliver_term(shell);
            }
        };
        let outer = std::mem::replace(&mut self.fds, fds);
        let flow = if argv.is_empty() {
            for (name, value) in assignments {
                shell.vars.set(&name, value);
            }
            shell.status = 0;
            Flow::Continue
        } else {
            self.command_words(shell, &argv, &assignments)
        };
        let reads_inherited = argv.first().is_some_and(|n| reads_input(executable_name(n), &argv[1..]));
        self.fds = outer;
        if reads_inherited && !simple.redirections.iter().any(|r| r.fd == 0) {
            // What it read is gone from the pipe.
            self.fds.input.text.clear();
        }
        if flow != Flow::Continue {
            return flow;
        }
        self.deliver_term(shell)
    }

    /// The descriptors of a simple command: the shell's, then its redirections in order. Files
    /// are opened (made, emptied) as busybox opens them; `Err` with its message if one fails.
    fn redirect(&mut self, simple: &Simple, scope: &Scope) -> Result<Fds, String> {
        let mut fds = self.fds.clone();
        for redirection in &simple.redirections {
            let sink = match &redirection.how {
                Redirect::Write(target) | Redirect::Append(target) => {
                    let path = single(target, scope);
                    match path.as_str() {
                        "/dev/null" => Sink::Null,
                        "/dev/stdout" => fds.out.clone(),
                        "/dev/stderr" => fds.err.clone(),
                        _ => Sink::File(self.files.open(&path, matches!(redirection.how, Redirect::Append(_)))?),
                    }
                }
                Redirect::Read(target) => {
                    let path = single(target, scope);
                    let text = if path == "/dev/null" { String::new() } else { self.files.read(&path)? };
                    fds.input = Input { text, ready_at: Some(0) };
                    continue;
                }
                Redirect::Dup(1) => fds.out.clone(),
                Redirect::Dup(2) => fds.err.clone(),
                Redirect::Dup(_) => continue,
            };
            match redirection.fd {
                1 => fds.out = sink,
                2 => fds.err = sink,
                _ => {}
            }
        }
        Ok(fds)
    }

    /// A command's words, expanded: a builtin, else a process.
    fn command_words(&mut self, shell: &mut Shell, argv: &[String], assignments: &[(String, String)]) -> Flow {
        let Some((name, args)) = argv.split_first() else { return Flow::Continue };
        let status = match name.as_str() {
            "exit" => return Flow::Exit(exit_status(args, shell.status)),
            "trap" => set_trap(shell, args),
            "exec" if args.is_empty() => 0,
            // The shell becomes the command: no traps any more, and if the shell was PID 1, the
            // command is, and TERM goes to it.
            "exec" => {
                shell.trap = Trap::Default;
                let term = shell.term_coming();
                let env = child_env(shell, assignments);
                return match self.external(args, term, &env) {
                    Flow::Continue => Flow::Exit(shell.status),
                    other => other,
                };
            }
            ":" | "true" => 0,
            "false" => 1,
            "export" => match self.export(shell, args) {
                Ok(()) => 0,
                Err(flow) => return flow,
            },
            "unset" => {
                args.iter().for_each(|name| shell.vars.unset(name));
                0
            }
            "test" => self.test(args),
            "[" => match args.split_last() {
                Some((last, operands)) if last == "]" => self.test(operands),
                _ => 2,
            },
            "sleep" => {
                let flow = self.sleep(args);
                shell.status = if flow == Flow::Continue && sleep_duration(args).is_some() { 0 } else { 1 };
                return flow;
            }
            "echo" | "printf" => match self.text_applet(name, args, true) {
                Flow::Exit(status) => status,
                other => return other,
            },
            _ => {
                let env = child_env(shell, assignments);
                match self.external(argv, None, &env) {
                    Flow::Exit(code) => code,
                    other => return other,
                }
            }
        };
        shell.status = status;
        Flow::Continue
    }

    /// `export NAME[=VALUE]...`. A bad name is an error of a special builtin: the shell exits
    /// with 2 (Docker 20.10: `sh: export: line 0: 1x: bad variable name` for `sh -c`; a script
    /// file's line number is not modelled).
    fn export(&mut self, shell: &mut Shell, args: &[String]) -> Result<(), Flow> {
        for arg in args {
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (arg.as_str(), None),
            };
            if !super::parse::is_name(name) {
                self.write_err(&format!("sh: export: line 0: {name}: bad variable name"));
                return Err(Flow::Exit(super::STATUS_SYNTAX));
            }
            shell.vars.export(name, value);
        }
        Ok(())
    }

    /// A command that is not a builtin: busybox's shell runs any of its applets by name; a path
    /// must name an executable of the image or a file that may be executed.
    fn external(&mut self, argv: &[String], term_at: Option<u64>, env: &Env) -> Flow {
        let Some(name) = argv.first() else { return Flow::Continue };
        if !name.contains('/') {
            if APPLETS.contains(&name.as_str()) {
                return self.process(argv, term_at, env);
            }
            self.write_err(&format!("sh: {name}: not found"));
            return Flow::Exit(STATUS_NOT_FOUND);
        }
        if is_image_executable(name) {
            return self.process(argv, term_at, env);
        }
        if self.files.is_dir(name) || (self.is_script_file(name) && !self.files.is_executable(name)) {
            self.write_err(&format!("sh: {name}: Permission denied"));
            return Flow::Exit(126);
        }
        if self.is_script_file(name) {
            return self.process(argv, term_at, env);
        }
        self.write_err(&format!("sh: {name}: not found"));
        Flow::Exit(STATUS_NOT_FOUND)
    }

    /// busybox `touch FILE...` (no options): each missing file made empty, status 1 if one
    /// cannot be.
    fn touch(&mut self, args: &[String]) -> Flow {
        if args.is_empty() || args.iter().any(|a| a.starts_with('-')) {
            return Flow::Unmodelled;
        }
        let mut status = 0;
        for path in args {
            if let Err(message) = self.files.touch(path) {
                self.write_err(&message);
                status = 1;
            }
        }
        Flow::Exit(status)
    }

    /// One of the applets whose output the model knows; a reader of a pipe waits for its
    /// writer to end first.
    fn text_applet(&mut self, name: &str, args: &[String], builtin: bool) -> Flow {
        if reads_input(name, args) {
            match self.fds.input.ready_at {
                Some(at) if self.kill_at.is_none_or(|kill| at < kill) => self.clock = self.clock.max(at),
                _ => {
                    return match self.kill_at {
                        Some(kill) => {
                            self.clock = self.clock.max(kill);
                            Flow::Killed
                        }
                        None => Flow::Forever,
                    };
                }
            }
        }
        let files = &self.files;
        let read = |path: &str| files.lookup(path);
        match applets::run(name, args, &self.fds.input.text, &read, builtin) {
            Ok(ran) => {
                let (out, err) = (self.fds.out.clone(), self.fds.err.clone());
                self.write(&out, &ran.out);
                for line in &ran.err {
                    self.write(&err, &format!("{line}\n"));
                }
                Flow::Exit(ran.status)
            }
            Err(Unmodelled) => Flow::Unmodelled,
        }
    }

    /// `sleep`: `Continue` once it has slept, `Killed` if KILL comes first, `Forever` for an
    /// endless sleep nothing will interrupt. Bad arguments end it at once (the caller sets 1).
    fn sleep(&mut self, args: &[String]) -> Flow {
        let Some(duration) = sleep_duration(args) else { return Flow::Continue };
        let end = duration.map(|d| self.clock.saturating_add(d));
        match (self.kill_at, end) {
            (Some(kill), _) if end.is_none_or(|end| kill <= end) => {
                self.clock = self.clock.max(kill);
                Flow::Killed
            }
            (_, None) => Flow::Forever,
            (_, Some(end)) => {
                self.clock = end;
                Flow::Continue
            }
        }
    }

    /// busybox `test`, for what the model knows: directories, files, strings.
    fn test(&self, args: &[String]) -> i64 {
        let truth = match args {
            [] => false,
            [s] => !s.is_empty(),
            [not, rest @ ..] if not == "!" => return 1 - self.test(rest).min(1),
            [op, path] if op == "-d" => self.files.is_dir(path),
            [op, path] if op == "-e" => self.files.is_dir(path) || self.files.is_file(path),
            [op, path] if op == "-f" => self.files.is_file(path),
            [op, path] if op == "-x" => {
                is_image_executable(path) || self.files.is_dir(path) || self.files.is_executable(path)
            }
            [op, path] if op == "-s" => matches!(self.files.lookup(path), Lookup::File(c) if !c.is_empty()),
            [op, s] if op == "-n" => !s.is_empty(),
            [op, s] if op == "-z" => s.is_empty(),
            [a, op, b] if op == "=" || op == "==" => a == b,
            [a, op, b] if op == "!=" => a != b,
            _ => return 2,
        };
        i64::from(!truth)
    }
}

/// Whether `path` is one of the image's executables in `/bin`.
fn is_image_executable(path: &str) -> bool {
    let path = clean_path(path);
    IMAGE_EXECUTABLES.iter().any(|e| path == format!("/bin/{e}"))
}

/// The environment of a child: the shell's exported variables and the command's assignments.
fn child_env(shell: &Shell, assignments: &[(String, String)]) -> Env {
    let mut env = shell.vars.environment();
    env.extend(assignments.iter().cloned());
    env
}

/// `exit [N]`: N modulo 256; no N: the last status; a negative or non-numeric N is busybox's
/// "Illegal number", which ends the shell with 2.
fn exit_status(args: &[String], last: i64) -> i64 {
    match args.first() {
        None => last,
        Some(n) => n.parse::<u64>().map_or(2, |n| i64::from((n % 256) as u8)),
    }
}

/// `trap ACTION SIGNAL...`: only TERM's handler matters to the model (the others are accepted
/// and have no effect). `-` restores the default, `''` ignores.
fn set_trap(shell: &mut Shell, args: &[String]) -> i64 {
    let [action, signals @ ..] = args else { return 0 };
    if signals.is_empty() {
        return 0;
    }
    let mut status = 0;
    for signal in signals {
        let upper = signal.to_ascii_uppercase();
        let name = upper.strip_prefix("SIG").unwrap_or(&upper);
        let known = matches!(name, "EXIT" | "0" | "HUP" | "1" | "INT" | "2" | "QUIT" | "3" | "USR1" | "USR2" | "ALRM");
        if name == "TERM" || name == "15" {
            shell.trap = match action.as_str() {
                "-" => Trap::Default,
                "" => Trap::Ignore,
                action => Trap::Run(action.to_string()),
            };
        } else if !known {
            status = 1; // "trap: BAD: invalid signal specification"
        }
    }
    status
}

/// busybox `sleep`: the sum of its arguments, each a decimal number of seconds with an optional
/// `s`, `m`, `h` or `d` suffix, or `inf`/`infinity`. `Some(None)`: for ever; `None`: a usage
/// error (no argument, or one it cannot parse).
pub(super) fn sleep_duration(args: &[String]) -> Option<Option<u64>> {
    if args.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    for arg in args {
        if arg.eq_ignore_ascii_case("inf") || arg.eq_ignore_ascii_case("infinity") {
            return Some(None);
        }
        total = total.saturating_add(parse_seconds(arg)?);
    }
    Some(Some(total))
}

/// `1.5` -> 1500, `2m` -> 120_000 (milliseconds, rounded up).
fn parse_seconds(arg: &str) -> Option<u64> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, 's') => (&arg[..i], 1_000),
        (i, 'm') => (&arg[..i], 60_000),
        (i, 'h') => (&arg[..i], 3_600_000),
        (i, 'd') => (&arg[..i], 86_400_000),
        _ => (arg, 1_000),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    // The fraction in units of 1/10^digits, scaled to milliseconds and rounded up.
    let digits = u32::try_from(fraction.len()).ok()?.min(18);
    let fraction: u64 = if fraction.is_empty() { 0 } else { fraction[..digits as usize].parse().ok()? };
    let scale = 10u64.pow(digits);
    let fraction_ms = (u128::from(fraction) * u128::from(unit)).div_ceil(u128::from(scale));
    whole.checked_mul(unit)?.checked_add(u64::try_from(fraction_ms).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_arguments() {
        let d = |args: &[&str]| sleep_duration(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(d(&["1"]), Some(Some(1_000)));
        assert_eq!(d(&["0.1"]), Some(Some(100)));
        assert_eq!(d(&["0.0005"]), Some(Some(1)), "rounded up to a millisecond");
        assert_eq!(d(&["1", "2m"]), Some(Some(121_000)));
        assert_eq!(d(&[".5"]), Some(Some(500)));
        assert_eq!(d(&["infinity"]), Some(None));
        assert_eq!(d(&[]), None);
        assert_eq!(d(&["abc"]), None);
        assert_eq!(d(&["-1"]), None);
    }

    #[test]
    fn exit_statuses() {
        let e = |n: &str| exit_status(&[n.to_string()], 9);
        assert_eq!((e("3"), e("300"), e("256"), e("-1"), e("abc")), (3, 44, 0, 2, 2));
        assert_eq!(exit_status(&[], 9), 9);
    }
}
