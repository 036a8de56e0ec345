//! Running a container's main process in simulated time: the flow of a script (lists, `&&`,
//! `||`, loops, `if`, `for`, pipelines) and the signals that reach it. Simple commands are in
//! `command`.
//!
//! Only `sleep` takes time (and a pipeline's reader waits for its writer, see
//! [`Machine::pipeline`]); every other command ends at once. What commands print goes to
//! standard output or error, a file or a pipe, as redirections say; the container's output is
//! cut into lines ([`Printed`], at most [`OUTPUT_LIMIT`] lines a run), a last line without a
//! newline ending when the process does. Signals follow Docker and busybox: `docker stop`
//! sends TERM to PID 1 only, and KILL after the grace period. PID 1 ignores a signal it has no
//! handler for when it arrives (the kernel's rule for a namespace's init: the signal is lost, a
//! handler installed later never sees it), so only a shell that ran `trap ACTION TERM` before
//! TERM came reacts to it, and it runs the action once its foreground command (or pipeline) has
//! ended (POSIX: a trap waits for the foreground command), never during a `sleep`. A TERM at
//! the instant of some commands comes before them. A child (`sh -c` inside a script, `sleep`, a
//! pipeline's members) never sees TERM.
//!
//! Loops are what make a script run for ever: a loop whose state at its head (status,
//! variables, trap, TERM delivered or not, files written) repeats is periodic, so the run skips
//! whole periods up to the next signal, and a periodic loop with no signal to come runs for
//! ever. A loop that writes a file each time round never repeats: it is followed step by step,
//! up to a limit.

use super::expand::Vars;
use super::files::Files;
use super::parse::{AndOr, Command, Connector, List, Pipeline, parse};
use super::{Env, Fs};
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

/// What a run of a main process did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ran {
    pub outcome: Outcome,
    /// What it printed, in order.
    pub printed: Vec<Printed>,
    /// The files it wrote, by absolute path, with their contents when it ended: the runtime
    /// applies them to the container then.
    pub written: BTreeMap<String, String>,
}

/// Run `argv` as PID 1 with environment `env` (its executable was found:
/// `super::check_exec`): how it ends, what it prints until then, what it wrote.
pub(crate) fn run(argv: &[String], fs: &Fs, env: &Env, signals: Signals) -> Ran {
    let mut machine = Machine {
        clock: 0,
        kill_at: signals.kill_at,
        files: Files::new(fs),
        steps: 0,
        output: Vec::new(),
        partial: [String::new(), String::new()],
        pipe: String::new(),
        fds: Fds::default(),
    };
    let flow = machine.pid_1(argv, signals.term_at, env);
    machine.end_lines();
    let outcome = match flow {
        Flow::Exit(code) => Outcome::Exits { after_ms: machine.clock, code },
        Flow::Unmodelled => Outcome::Exits { after_ms: machine.clock, code: super::STATUS_SYNTAX },
        Flow::Killed => Outcome::Exits { after_ms: machine.clock, code: KILLED },
        Flow::Continue | Flow::Forever => Outcome::Forever,
    };
    Ran { outcome, printed: machine.output, written: machine.files.into_written() }
}

/// What a command did to the flow of its script.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// The shell (or process) exits with this status.
    Exit(i64),
    /// KILL arrived: the whole container is gone.
    Killed,
    /// It blocks for ever: no signal will come.
    Forever,
    /// The script does what the model does not know (see `applets`): it ends the main process
    /// with status 2, like a syntax error.
    Unmodelled,
}

/// What a shell does on TERM.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Trap {
    /// No handler: PID 1 ignores it.
    Default,
    /// `trap '' TERM`.
    Ignore,
    /// `trap 'ACTION' TERM`: the action's source.
    Run(String),
}

/// Where TERM is, for one shell.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Term {
    /// Not arrived (or never coming).
    Coming,
    /// Arrived while a handler was set: it runs when the foreground command ends.
    Armed,
    /// Handled, or lost on arrival (no handler then).
    Done,
}

/// A loop's state at its head: (loop id, status, variables, trap, TERM, files' version).
type LoopState = (usize, i64, Vars, Trap, Term, u64);

/// One shell process.
pub(super) struct Shell {
    pub status: i64,
    pub trap: Trap,
    /// When TERM reaches this shell (PID 1 only).
    term_at: Option<u64>,
    pub term: Term,
    pub vars: Vars,
    /// `$0`, then `$1`...
    pub args: Vec<String>,
    /// Loop head states seen, when, and how many lines were printed by then.
    seen: BTreeMap<LoopState, (u64, usize)>,
}

impl Shell {
    pub(super) fn new(term_at: Option<u64>, env: &Env, args: Vec<String>) -> Self {
        Shell {
            status: 0,
            trap: Trap::Default,
            term_at,
            term: Term::Coming,
            vars: Vars::from_env(env),
            args,
            seen: BTreeMap::new(),
        }
    }

    /// A subshell (a pipeline's member): the variables and arguments, no trap, no TERM.
    fn subshell(&self) -> Shell {
        Shell {
            status: self.status,
            trap: Trap::Default,
            term_at: None,
            term: Term::Done,
            vars: self.vars.clone(),
            args: self.args.clone(),
            seen: BTreeMap::new(),
        }
    }

    /// When TERM will arrive, if it has not yet.
    pub(super) fn term_coming(&self) -> Option<u64> {
        self.term_at.filter(|_| self.term == Term::Coming)
    }

    /// TERM arrives if its time has come by `clock`: armed if a handler is set, else lost. A
    /// TERM sent the instant the process started arrives after what it runs at once: on Docker
    /// a stop reaches the process milliseconds after its start, long after a first `trap`
    /// (`drydock runtime diff` found the model losing such a TERM).
    pub(super) fn arrive_by(&mut self, clock: u64) {
        if self.term_coming().is_some_and(|at| at < clock || (at == clock && at > 0)) {
            self.term = if matches!(self.trap, Trap::Run(_)) { Term::Armed } else { Term::Done };
        }
    }
}

/// Where a descriptor writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Sink {
    #[default]
    Stdout,
    Stderr,
    /// `/dev/null`.
    Null,
    /// A file, by absolute path (opened: it exists in the run's files).
    File(String),
    /// The pipe to the next member of the pipeline.
    Pipe,
}

/// What a command reads on its standard input: text, and when its writer is done (`None`:
/// never, it runs for ever). A container's main process reads `/dev/null`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Input {
    pub text: String,
    pub ready_at: Option<u64>,
}

/// A command's standard input, output and error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fds {
    pub input: Input,
    pub out: Sink,
    pub err: Sink,
}

impl Default for Fds {
    fn default() -> Self {
        Fds { input: Input { text: String::new(), ready_at: Some(0) }, out: Sink::Stdout, err: Sink::Stderr }
    }
}

/// The container: one clock, one KILL, one file system, for every process in it.
pub(super) struct Machine<'a> {
    pub clock: u64,
    pub kill_at: Option<u64>,
    pub files: Files<'a>,
    pub steps: u64,
    pub output: Vec<Printed>,
    /// The unfinished last line of standard output and of standard error.
    partial: [String; 2],
    /// What the current pipeline member has written to its pipe.
    pipe: String,
    /// The descriptors the running shell's commands inherit.
    pub fds: Fds,
}

impl Machine<'_> {
    /// A command that is a shell runs its script; one that is a script file without `#!` cannot
    /// be executed by runc: `exec PATH: exec format error` on standard error, status 1 (Docker
    /// 20.10: the container starts, then exits).
    fn pid_1(&mut self, argv: &[String], term_at: Option<u64>, env: &Env) -> Flow {
        if let Some(path) = argv.first().filter(|p| self.is_script_file(p))
            && !self.has_shebang(path)
        {
            self.write(&Sink::Stderr, &format!("exec {path}: exec format error\n"));
            return Flow::Exit(1);
        }
        self.process(argv, term_at, env)
    }

    /// A shell's script: `sh -c SCRIPT [NAME ARGS...]`, `sh FILE [ARGS...]`.
    pub(super) fn shell_process(&mut self, argv0: &str, args: &[String], term_at: Option<u64>, env: &Env) -> Flow {
        let (script, positional) = match args {
            [] => return Flow::Exit(0),
            [c] if c == "-c" => {
                self.write_err("sh: -c requires an argument");
                return Flow::Exit(super::STATUS_SYNTAX);
            }
            [c, script, rest @ ..] if c == "-c" => {
                let mut positional: Vec<String> = rest.to_vec();
                if positional.is_empty() {
                    positional.push(argv0.to_string());
                }
                (script.clone(), positional)
            }
            [file, rest @ ..] => match self.files.read(file) {
                Ok(contents) if !self.files.is_dir(file) => {
                    (contents, std::iter::once(file.clone()).chain(rest.iter().cloned()).collect())
                }
                _ => {
                    self.write_err(&format!("sh: can't open '{file}': No such file or directory"));
                    return Flow::Exit(super::STATUS_SYNTAX);
                }
            },
        };
        let Ok(list) = parse(&script) else { return Flow::Exit(super::STATUS_SYNTAX) };
        let mut shell = Shell::new(term_at, env, positional);
        match self.list(&mut shell, &list) {
            Flow::Continue => Flow::Exit(shell.status),
            other => other,
        }
    }

    pub(super) fn list(&mut self, shell: &mut Shell, list: &List) -> Flow {
        for and_or in list {
            let flow = self.and_or(shell, and_or);
            if flow != Flow::Continue {
                return flow;
            }
        }
        Flow::Continue
    }

    fn and_or(&mut self, shell: &mut Shell, and_or: &AndOr) -> Flow {
        let mut flow = self.pipeline(shell, &and_or.first);
        for (connector, pipeline) in &and_or.rest {
            if flow != Flow::Continue {
                return flow;
            }
            let run = match connector {
                Connector::And => shell.status == 0,
                Connector::Or => shell.status != 0,
            };
            if run {
                flow = self.pipeline(shell, pipeline);
            }
        }
        flow
    }

    /// A pipeline: one command in the shell itself, or several, each in a subshell, all started
    /// together. In the model they run one after the other from the same instant, each writing
    /// its pipe in full; a member that reads its standard input waits until the member before
    /// it has ended (it sees the whole text then, not line by line). The pipeline ends when the
    /// last of its members does, with the status of the last one. A member that never ends
    /// makes the pipeline endless (a reader's `SIGPIPE` is not modelled).
    fn pipeline(&mut self, shell: &mut Shell, pipeline: &Pipeline) -> Flow {
        let flow = match pipeline.commands.as_slice() {
            [command] => self.command(shell, command),
            commands => self.members(shell, commands),
        };
        if pipeline.negate && flow == Flow::Continue {
            shell.status = i64::from(shell.status == 0);
        }
        flow
    }

    fn members(&mut self, shell: &mut Shell, commands: &[Command]) -> Flow {
        let (start, from) = (self.clock, self.output.len());
        let outer = self.fds.clone();
        let outer_pipe = std::mem::take(&mut self.pipe);
        let (mut end, mut input, mut status) = (start, outer.input.clone(), 0);
        let mut flow = Flow::Continue;
        for (i, command) in commands.iter().enumerate() {
            self.clock = start;
            let out = if i + 1 == commands.len() { outer.out.clone() } else { Sink::Pipe };
            self.fds = Fds { input: std::mem::take(&mut input), out, err: outer.err.clone() };
            let mut member = shell.subshell();
            let ended = match self.command(&mut member, command) {
                Flow::Continue => Some(member.status),
                Flow::Exit(code) => Some(code),
                Flow::Forever => {
                    flow = Flow::Forever;
                    None
                }
                other => {
                    flow = other;
                    break;
                }
            };
            status = ended.unwrap_or(status);
            input = Input { text: std::mem::take(&mut self.pipe), ready_at: ended.map(|_| self.clock) };
            end = end.max(self.clock);
        }
        self.fds = outer;
        self.pipe = outer_pipe;
        // Members run at once: their lines interleave by time.
        self.output[from..].sort_by_key(|line| line.after_ms);
        match flow {
            Flow::Continue => {
                self.clock = end;
                shell.status = status;
                self.deliver_term(shell)
            }
            Flow::Killed => {
                self.clock = self.kill_at.unwrap_or(self.clock).max(start);
                Flow::Killed
            }
            other => other,
        }
    }

    pub(super) fn command(&mut self, shell: &mut Shell, command: &Command) -> Flow {
        match command {
            Command::Simple(simple) => self.simple(shell, simple),
            Command::Loop { id, until, condition, body } => self.repeat(shell, *id, *until, condition, body),
            Command::For { name, words, body } => self.for_each(shell, name, words.as_deref(), body),
            Command::If { branches, otherwise } => {
                for (condition, body) in branches {
                    let flow = self.list(shell, condition);
                    if flow != Flow::Continue {
                        return flow;
                    }
                    if shell.status == 0 {
                        return self.list(shell, body);
                    }
                }
                match otherwise {
                    Some(list) => self.list(shell, list),
                    None => {
                        shell.status = 0;
                        Flow::Continue
                    }
                }
            }
        }
    }

    /// `for NAME in WORDS`: the body once per field of the words, the variable set to it; the
    /// status of the last body, 0 if none ran.
    fn for_each(&mut self, shell: &mut Shell, name: &str, words: Option<&[super::lex::Word]>, body: &List) -> Flow {
        let items = match words {
            Some(words) => {
                let scope = super::expand::Scope { vars: &shell.vars, status: shell.status, args: &shell.args };
                super::expand::fields(words, &scope)
            }
            None => shell.args.iter().skip(1).cloned().collect(),
        };
        let mut status = 0;
        for item in items {
            shell.vars.set(name, item);
            let flow = self.list(shell, body);
            if flow != Flow::Continue {
                return flow;
            }
            status = shell.status;
        }
        shell.status = status;
        Flow::Continue
    }

    fn repeat(&mut self, shell: &mut Shell, id: usize, until: bool, condition: &List, body: &List) -> Flow {
        let mut status = 0;
        loop {
            let key = (id, shell.status, shell.vars.clone(), shell.trap.clone(), shell.term, self.files.version());
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

    /// Write `text` where `sink` goes: the container's streams line by line, a file, the pipe.
    pub(super) fn write(&mut self, sink: &Sink, text: &str) {
        let stream = match sink {
            Sink::Stdout => Stream::Stdout,
            Sink::Stderr => Stream::Stderr,
            Sink::Null => return,
            Sink::File(path) => return self.files.append(path, text),
            Sink::Pipe => return self.pipe.push_str(text),
        };
        let index = stream as usize;
        let mut rest = text;
        while let Some((line, after)) = rest.split_once('\n') {
            let mut whole = std::mem::take(&mut self.partial[index]);
            whole.push_str(line);
            self.line(stream, whole);
            rest = after;
        }
        self.partial[index].push_str(rest);
    }

    /// A message line on the current standard error.
    pub(super) fn write_err(&mut self, line: &str) {
        let err = self.fds.err.clone();
        self.write(&err, &format!("{line}\n"));
    }

    fn line(&mut self, stream: Stream, text: String) {
        if self.output.len() < OUTPUT_LIMIT {
            self.output.push(Printed { after_ms: self.clock, stream, text });
        }
    }

    /// The process ended: a last line without a newline ends with it.
    fn end_lines(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let text = std::mem::take(&mut self.partial[stream as usize]);
            if !text.is_empty() {
                self.line(stream, text);
            }
        }
    }

    /// A command ended: if TERM arrived while a handler was set, run the handler now.
    pub(super) fn deliver_term(&mut self, shell: &mut Shell) -> Flow {
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
}
