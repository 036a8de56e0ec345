//! Running a container's main process in simulated time.
//!
//! Only `sleep` takes time; every other command ends at once, and commands have no effect but
//! their status and their output: `echo` prints its arguments and `seq` its numbers, to standard
//! output or where a redirection sends them ([`Printed`], at most [`OUTPUT_LIMIT`] lines a run). Signals follow Docker and busybox: `docker stop` sends TERM to PID 1 only, and
//! KILL after the grace period. PID 1 ignores a signal it has no handler for when it arrives
//! (the kernel's rule for a namespace's init: the signal is lost, a handler installed later never
//! sees it), so only a shell that ran `trap ACTION TERM` before TERM came reacts to it, and it
//! runs the action once its foreground command has ended (POSIX: a trap waits for the foreground
//! command), never during a `sleep`. A TERM at the instant of some commands comes before them. A
//! child (`sh -c` inside a script, `sleep`) never sees TERM.
//!
//! Loops are what make a script run for ever: a loop whose state at its head (status, trap, TERM
//! delivered or not) repeats is periodic, so the run skips whole periods up to the next signal,
//! and a periodic loop with no signal to come runs for ever.

use super::parse::{AndOr, Command, Connector, List, Out, Part, Word, parse};
use super::{APPLETS, Fs, IMAGE_EXECUTABLES, STATUS_NOT_FOUND, clean_path, executable_name};
use std::collections::BTreeMap;

/// When signals reach PID 1, in milliseconds after its start.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Signals {
    pub term_at: Option<u64>,
    pub kill_at: Option<u64>,
}

/// How the main process ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It exits this long after its start, with this status (137 when killed).
    Exits { after_ms: u64, code: i64 },
    /// It never ends by itself.
    Forever,
}

/// The status of a process killed by SIGKILL (128 + 9).
pub(crate) const KILLED: i64 = 137;

/// Lines of output one run of a main process may print in the model; the rest is not modelled
/// (a loop that prints for ever prints this much).
pub const OUTPUT_LIMIT: usize = 1_000;

/// Standard output or standard error.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A line the main process printed, this long after its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Printed {
    pub after_ms: u64,
    pub stream: Stream,
    pub text: String,
}

/// Simple commands one run may execute before the model calls it endless: a loop that never
/// repeats its state within this many steps is beyond the model.
const STEP_LIMIT: u64 = 100_000;

/// Run `argv` as PID 1 (its executable was found: `super::check_exec`): how it ends, and what it
/// prints until then, in order.
pub(crate) fn run(argv: &[String], fs: &Fs, signals: Signals) -> (Outcome, Vec<Printed>) {
    let mut machine = Machine { clock: 0, kill_at: signals.kill_at, fs, steps: 0, output: Vec::new() };
    let flow = machine.process(argv, signals.term_at, Out::Stdout);
    let outcome = match flow {
        Flow::Exit(code) => Outcome::Exits { after_ms: machine.clock, code },
        Flow::Killed => Outcome::Exits { after_ms: machine.clock, code: KILLED },
        Flow::Continue | Flow::Forever => Outcome::Forever,
    };
    (outcome, machine.output)
}

/// What a command did to the flow of its script.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The shell (or process) exits with this status.
    Exit(i64),
    /// KILL arrived: the whole container is gone.
    Killed,
    /// It blocks for ever: no signal will come.
    Forever,
}

/// What a shell does on TERM.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Trap {
    /// No handler: PID 1 ignores it.
    Default,
    /// `trap '' TERM`.
    Ignore,
    /// `trap 'ACTION' TERM`: the action's source.
    Run(String),
}

/// Where TERM is, for one shell.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Term {
    /// Not arrived (or never coming).
    Coming,
    /// Arrived while a handler was set: it runs when the foreground command ends.
    Armed,
    /// Handled, or lost on arrival (no handler then).
    Done,
}

/// One shell process.
struct Shell {
    status: i64,
    trap: Trap,
    /// When TERM reaches this shell (PID 1 only).
    term_at: Option<u64>,
    term: Term,
    /// Loop head states seen, when, and how many lines were printed by then: (loop id, status,
    /// trap, TERM) -> (clock, lines).
    seen: BTreeMap<(usize, i64, Trap, Term), (u64, usize)>,
}

impl Shell {
    fn new(term_at: Option<u64>) -> Self {
        Shell { status: 0, trap: Trap::Default, term_at, term: Term::Coming, seen: BTreeMap::new() }
    }

    /// When TERM will arrive, if it has not yet.
    fn term_coming(&self) -> Option<u64> {
        self.term_at.filter(|_| self.term == Term::Coming)
    }

    /// TERM arrives if its time has come by `clock`: armed if a handler is set, else lost. A
    /// TERM sent the instant the process started arrives after what it runs at once: on Docker
    /// a stop reaches the process milliseconds after its start, long after a first `trap`
    /// (`drydock runtime diff` found the model losing such a TERM).
    fn arrive_by(&mut self, clock: u64) {
        if self.term_coming().is_some_and(|at| at < clock || (at == clock && at > 0)) {
            self.term = if matches!(self.trap, Trap::Run(_)) { Term::Armed } else { Term::Done };
        }
    }
}

/// The container: one clock, one KILL, one file system, for every process in it.
struct Machine<'a> {
    clock: u64,
    kill_at: Option<u64>,
    fs: &'a Fs,
    steps: u64,
    output: Vec<Printed>,
}

impl Machine<'_> {
    /// Run a process; `term_at`: when TERM reaches it (it is PID 1). Its status is in `Exit`.
    fn process(&mut self, argv: &[String], term_at: Option<u64>, out: Out) -> Flow {
        let Some((first, args)) = argv.split_first() else { return Flow::Exit(0) };
        let name = executable_name(first);
        match name {
            "sh" => self.shell_process(args, term_at),
            "echo" => {
                self.echo(args, out);
                Flow::Exit(0)
            }
            "seq" => Flow::Exit(self.seq(args, out)),
            "cat" => Flow::Exit(self.cat(args, out)),
            "busybox" => match args.split_first() {
                Some((applet, _)) if APPLETS.contains(&executable_name(applet)) => self.process(args, term_at, out),
                Some(_) => Flow::Exit(STATUS_NOT_FOUND),
                None => Flow::Exit(0),
            },
            "sleep" if sleep_duration(args).is_none() => Flow::Exit(1),
            "sleep" => match self.sleep(args) {
                Flow::Continue => Flow::Exit(0),
                other => other,
            },
            "false" => Flow::Exit(1),
            _ => Flow::Exit(0),
        }
    }

    /// busybox `sh`: `-c SCRIPT` runs the script; no argument reads the (empty) standard input;
    /// anything else names a script file the image does not have.
    fn shell_process(&mut self, args: &[String], term_at: Option<u64>) -> Flow {
        let script = match args {
            [] => return Flow::Exit(0),
            [c, script, ..] if c == "-c" => script,
            _ => return Flow::Exit(2),
        };
        let Ok(list) = parse(script) else { return Flow::Exit(2) };
        let mut shell = Shell::new(term_at);
        match self.list(&mut shell, &list) {
            Flow::Continue => Flow::Exit(shell.status),
            other => other,
        }
    }

    fn list(&mut self, shell: &mut Shell, list: &List) -> Flow {
        for and_or in list {
            let flow = self.and_or(shell, and_or);
            if flow != Flow::Continue {
                return flow;
            }
        }
        Flow::Continue
    }

    fn and_or(&mut self, shell: &mut Shell, and_or: &AndOr) -> Flow {
        let mut flow = self.command(shell, &and_or.first.command, and_or.first.negate);
        for (connector, pipeline) in &and_or.rest {
            if flow != Flow::Continue {
                return flow;
            }
            let run = match connector {
                Connector::And => shell.status == 0,
                Connector::Or => shell.status != 0,
            };
            if run {
                flow = self.command(shell, &pipeline.command, pipeline.negate);
            }
        }
        flow
    }

    fn command(&mut self, shell: &mut Shell, command: &Command, negate: bool) -> Flow {
        let flow = match command {
            Command::Simple(words, out) => self.simple(shell, words, *out),
            Command::Loop { id, until, condition, body } => self.repeat(shell, *id, *until, condition, body),
            Command::If { branches, otherwise } => {
                let mut taken = false;
                let mut flow = Flow::Continue;
                for (condition, body) in branches {
                    flow = self.list(shell, condition);
                    if flow != Flow::Continue {
                        break;
                    }
                    if shell.status == 0 {
                        taken = true;
                        flow = self.list(shell, body);
                        break;
                    }
                }
                if flow == Flow::Continue && !taken {
                    match otherwise {
                        Some(list) => flow = self.list(shell, list),
                        None => shell.status = 0,
                    }
                }
                flow
            }
        };
        if negate && flow == Flow::Continue {
            shell.status = i64::from(shell.status == 0);
        }
        flow
    }

    fn repeat(&mut self, shell: &mut Shell, id: usize, until: bool, condition: &List, body: &List) -> Flow {
        let mut status = 0;
        loop {
            let key = (id, shell.status, shell.trap.clone(), shell.term);
            if let Some(&(before, printed)) = shell.seen.get(&key)
                && let Some(flow) = self.skip_periods(shell, self.clock - before, printed)
            {
                return flow;
            }
            shell.seen.insert(key, (self.clock, self.output.len()));
            let flow = self.list(shell, condition);
            if flow != Flow::Continue {
                return flow;
            }
            if (shell.status == 0) == until {
                break;
            }
            let flow = self.list(shell, body);
            if flow != Flow::Continue {
                return flow;
            }
            status = shell.status;
        }
        shell.status = status;
        Flow::Continue
    }

    /// A loop repeats its state every `period`: jump ahead by whole periods to the next signal,
    /// printing in each what the last period printed (from line `printed` on), up to the limit.
    /// `Some` when the loop ends here (killed, or nothing will ever come).
    fn skip_periods(&mut self, shell: &mut Shell, period: u64, printed: usize) -> Option<Flow> {
        let next = [shell.term_coming().map(|at| at.max(self.clock)), self.kill_at].into_iter().flatten().min();
        let skipped = match next {
            None => u64::MAX,
            Some(_) if period == 0 => u64::MAX,
            Some(next) => next.saturating_sub(self.clock) / period,
        };
        self.repeat_output(printed, period, skipped);
        let Some(next) = next else { return Some(Flow::Forever) };
        if period == 0 {
            self.clock = self.clock.max(next);
        } else if next > self.clock {
            self.clock += (next - self.clock) / period * period;
        }
        shell.seen.clear();
        match self.kill_at {
            Some(kill) if self.clock >= kill => {
                self.clock = kill;
                Some(Flow::Killed)
            }
            _ => None,
        }
    }

    /// Print again, `times` times, the lines from `from` on, each time `period` later.
    fn repeat_output(&mut self, from: usize, period: u64, times: u64) {
        let once: Vec<Printed> = self.output[from.min(self.output.len())..].to_vec();
        if once.is_empty() {
            return;
        }
        let mut shift = 0u64;
        for _ in 0..times {
            shift = shift.saturating_add(period);
            for line in &once {
                if self.output.len() >= OUTPUT_LIMIT {
                    return;
                }
                self.output.push(Printed { after_ms: line.after_ms.saturating_add(shift), ..line.clone() });
            }
        }
    }

    fn print(&mut self, out: Out, text: String) {
        let stream = match out {
            Out::Stdout => Stream::Stdout,
            Out::Stderr => Stream::Stderr,
            Out::Nowhere => return,
        };
        if self.output.len() < OUTPUT_LIMIT {
            self.output.push(Printed { after_ms: self.clock, stream, text });
        }
    }

    /// busybox `echo`: its arguments, space-separated (`-n` and `-e` taken as options).
    fn echo(&mut self, args: &[String], out: Out) {
        let words: Vec<&str> =
            args.iter().map(String::as_str).skip_while(|a| matches!(*a, "-n" | "-e" | "-E")).collect();
        self.print(out, words.join(" "));
    }

    /// busybox `seq [FIRST] LAST`: one number a line. Status 1 for what it cannot parse.
    fn seq(&mut self, args: &[String], out: Out) -> i64 {
        let numbers: Option<Vec<i64>> = args.iter().map(|a| a.parse().ok()).collect();
        let (first, last) = match numbers.as_deref() {
            Some([last]) => (1, *last),
            Some([first, last]) => (*first, *last),
            _ => return 1,
        };
        let mut n = first;
        while n <= last && self.output.len() < OUTPUT_LIMIT {
            self.print(out, n.to_string());
            n += 1;
        }
        0
    }

    /// busybox `cat FILE...`: each file's lines (a last line without a newline too), in order.
    /// A file the model does not know the contents of, or a directory, is an error on standard
    /// error, and the status is 1; no file reads the (empty) standard input.
    fn cat(&mut self, args: &[String], out: Out) -> i64 {
        let mut status = 0;
        for arg in args.iter().filter(|a| a.as_str() != "-") {
            let path = clean_path(arg);
            if let Some(contents) = self.fs.files.get(&path) {
                for line in contents.strip_suffix('\n').unwrap_or(contents).split('\n') {
                    if !contents.is_empty() {
                        self.print(out, line.to_string());
                    }
                }
            } else if self.fs.dirs.contains(&path) {
                self.print(Out::Stderr, "cat: read error: Is a directory".into());
                status = 1;
            } else {
                self.print(Out::Stderr, format!("cat: can't open '{arg}': No such file or directory"));
                status = 1;
            }
        }
        status
    }

    fn simple(&mut self, shell: &mut Shell, words: &[Word], out: Out) -> Flow {
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
        let argv: Vec<String> = words.iter().map(|w| expand(w, shell.status)).collect();
        let Some((name, args)) = argv.split_first() else { return Flow::Continue };
        let flow = match name.as_str() {
            "exit" => return Flow::Exit(exit_status(args, shell.status)),
            "trap" => {
                shell.status = set_trap(shell, args);
                Flow::Continue
            }
            "exec" if args.is_empty() => {
                shell.status = 0;
                Flow::Continue
            }
            // The shell becomes the command: no traps any more, and if the shell was PID 1, the
            // command is, and TERM goes to it.
            "exec" => {
                shell.trap = Trap::Default;
                let term = shell.term_coming();
                return match self.external(args, term, out) {
                    Flow::Continue => Flow::Exit(shell.status),
                    other => other,
                };
            }
            ":" | "true" => {
                shell.status = 0;
                Flow::Continue
            }
            "echo" => {
                self.echo(args, out);
                shell.status = 0;
                Flow::Continue
            }
            "false" => {
                shell.status = 1;
                Flow::Continue
            }
            "test" => {
                shell.status = self.test(args);
                Flow::Continue
            }
            "[" => {
                shell.status = match args.split_last() {
                    Some((last, operands)) if last == "]" => self.test(operands),
                    _ => 2,
                };
                Flow::Continue
            }
            "sleep" => {
                let flow = self.sleep(args);
                shell.status = if flow == Flow::Continue && sleep_duration(args).is_some() { 0 } else { 1 };
                flow
            }
            _ => match self.external(&argv, None, out) {
                Flow::Exit(code) => {
                    shell.status = code;
                    Flow::Continue
                }
                other => other,
            },
        };
        if flow != Flow::Continue {
            return flow;
        }
        self.deliver_term(shell)
    }

    /// A command that is not a builtin: busybox's shell runs any of its applets by name; a path
    /// must name an executable of the image; anything else is "not found" (127).
    fn external(&mut self, argv: &[String], term_at: Option<u64>, out: Out) -> Flow {
        let Some(name) = argv.first() else { return Flow::Continue };
        let known = if name.contains('/') {
            IMAGE_EXECUTABLES.iter().any(|e| clean_path(name) == format!("/bin/{e}"))
        } else {
            APPLETS.contains(&name.as_str())
        };
        if !known {
            return Flow::Exit(if self.fs.dirs.contains(&clean_path(name)) { 126 } else { STATUS_NOT_FOUND });
        }
        self.process(argv, term_at, out)
    }

    /// A command ended: if TERM arrived while a handler was set, run the handler now.
    fn deliver_term(&mut self, shell: &mut Shell) -> Flow {
        shell.arrive_by(self.clock);
        if shell.term != Term::Armed {
            return Flow::Continue;
        }
        shell.term = Term::Done;
        let Trap::Run(action) = shell.trap.clone() else { return Flow::Continue };
        let saved = shell.status;
        let flow = match parse(&action) {
            Ok(list) => self.list(shell, &list),
            Err(_) => Flow::Continue,
        };
        if flow == Flow::Continue {
            shell.status = saved;
        }
        flow
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

    /// busybox `test`, for what the model knows: directories, a few files, strings.
    fn test(&self, args: &[String]) -> i64 {
        let is_dir = |p: &str| self.fs.dirs.contains(&clean_path(p));
        let is_file = |p: &str| {
            let p = clean_path(p);
            self.fs.files.contains_key(&p)
                || IMAGE_EXECUTABLES.iter().any(|e| p == format!("/bin/{e}"))
                || ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"].contains(&p.as_str())
        };
        let truth = match args {
            [] => false,
            [s] => !s.is_empty(),
            [not, rest @ ..] if not == "!" => return 1 - self.test(rest).min(1),
            [op, path] if op == "-d" => is_dir(path),
            [op, path] if op == "-e" => is_dir(path) || is_file(path),
            [op, path] if op == "-f" || op == "-x" => is_file(path),
            [op, s] if op == "-n" => !s.is_empty(),
            [op, s] if op == "-z" => s.is_empty(),
            [a, op, b] if op == "=" || op == "==" => a == b,
            [a, op, b] if op == "!=" => a != b,
            _ => return 2,
        };
        i64::from(!truth)
    }
}

fn expand(word: &Word, status: i64) -> String {
    word.parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.clone(),
            Part::Status => status.to_string(),
        })
        .collect()
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
fn sleep_duration(args: &[String]) -> Option<Option<u64>> {
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
