//! What a container runs: its command as PID 1, as runc starts it, and busybox's `sh` for the
//! scripts tests and workloads give it.
//!
//! Every simulated image is the conformance suite's test image: a busybox root file system with
//! the executables [`IMAGE_EXECUTABLES`] in `/bin` (kept equal to the applets
//! `drydock_adapters::testing` links when it builds that image). So:
//! - runc must find the command: a name in `/bin`, or a path to one of those files or to a file
//!   of the container whose mode lets it run; anything else fails the start ([`check_exec`]) the
//!   way Docker 20.10 does, with status 127 or 126;
//! - inside `sh`, busybox runs any of its [`APPLETS`] by name even without a link (a "standalone"
//!   shell), and a command it does not know exits 127 without stopping the script;
//! - [`run()`] plays the process in simulated time, with the environment Docker gives it
//!   ([`environment`]): the shell subset of `parse` (`lex` for words and `$` expansions,
//!   `expand` for their values and field splitting), pipelines and signals in `run`, simple
//!   commands in `command`; `sleep` is the only thing that takes time. What it prints is
//!   modelled for `echo`, `printf`, `seq`, `cat` and the filters `wc`, `head`, `tail`, `grep`,
//!   `tr` (`applets`); the applets that change files other than `touch` end the run with 2; other
//!   applets print nothing and end with 0.
//! - the file system ([`Fs`]) is `/`, `/bin`, `/dev`, `/etc`, `/proc`, `/sys`, the container's
//!   mount targets, and the files its image's build and `docker cp` (an archive upload) put
//!   there, with the directories above them: `test` knows them, `cat` prints a file, `sh FILE`
//!   and `FILE` run a script. A run writes files with `>` and `>>` (`files`); what it wrote is
//!   the container's (or its volume's) once it ends (`run::Ran::written`); `touch` makes a file.
//!   Directories a run makes (`mkdir`), file modes it changes (`chmod`), removals (`rm`) are
//!   not modelled: such a run ends with 2.
//! - an image built `FROM scratch` has no busybox at all: nothing in it can be run.

mod applets;
mod command;
mod expand;
mod files;
mod lex;
mod parse;
mod run;
#[cfg(test)]
mod tests;

pub(crate) use drydock_engine::runtime::clean_path;
pub(crate) use run::{KILLED, Outcome, Printed, Signals, run};
pub use run::{OUTPUT_LIMIT, Stream};

use std::collections::{BTreeMap, BTreeSet};

/// A process's environment: name -> value.
pub(crate) type Env = BTreeMap<String, String>;

/// Docker's `PATH` for an image that sets none (the test image sets none).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment of a container's main process on Docker 20.10: the create's variables, with
/// `PATH` (Docker's default), `HOSTNAME` (the container's short id) and `HOME` (`/`: the test
/// image runs as root with no `/etc/passwd` entry for it) unless the create sets them.
pub(crate) fn environment(create_env: &Env, hostname: &str) -> Env {
    let mut env = create_env.clone();
    env.entry("PATH".into()).or_insert_with(|| DEFAULT_PATH.into());
    env.entry("HOSTNAME".into()).or_insert_with(|| hostname.into());
    env.entry("HOME".into()).or_insert_with(|| "/".into());
    env
}

/// The files in the image's `/bin`: busybox and the applets linked to it.
pub(crate) const IMAGE_EXECUTABLES: &[&str] =
    &["busybox", "sh", "sleep", "true", "false", "echo", "cat", "ls", "ps", "env", "id", "kill", "wget"];

/// Applets busybox's shell runs by name (a common subset of Debian's busybox-static): all end at
/// once with status 0 in the model, except those `command` interprets (`sleep`, `false`, `sh`,
/// `touch`, the text applets of `applets`) and [`FILE_CHANGING_APPLETS`].
const APPLETS: &[&str] = &[
    "awk",
    "basename",
    "busybox",
    "cat",
    "chmod",
    "chown",
    "cp",
    "cut",
    "date",
    "dd",
    "df",
    "dirname",
    "du",
    "echo",
    "env",
    "expr",
    "false",
    "find",
    "free",
    "grep",
    "head",
    "hostname",
    "id",
    "kill",
    "killall",
    "ln",
    "ls",
    "md5sum",
    "mkdir",
    "mktemp",
    "mv",
    "nc",
    "nproc",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "readlink",
    "realpath",
    "rm",
    "rmdir",
    "sed",
    "seq",
    "sh",
    "sha256sum",
    "sleep",
    "sort",
    "stat",
    "sync",
    "tail",
    "tee",
    "touch",
    "tr",
    "true",
    "uname",
    "uniq",
    "uptime",
    "usleep",
    "wc",
    "wget",
    "which",
    "whoami",
    "xargs",
    "yes",
];

/// Applets that change the file system in ways the model does not follow (directories,
/// removals, modes, copies, in-place edits): a run that calls one ends with status 2, like a syntax error,
/// rather than going on with files the model would get wrong.
const FILE_CHANGING_APPLETS: &[&str] =
    &["chmod", "chown", "cp", "dd", "ln", "mkdir", "mktemp", "mv", "rm", "rmdir", "sed", "tee"];

/// The status of a command that is not found.
const STATUS_NOT_FOUND: i64 = 127;

/// The status of a shell that cannot parse its script (and of one the model cannot follow).
const STATUS_SYNTAX: i64 = 2;

/// Directories every container has (Docker adds `/dev`, `/etc`, `/proc`, `/sys` to the image's).
const BASE_DIRECTORIES: [&str; 6] = ["/", "/bin", "/dev", "/etc", "/proc", "/sys"];

/// Why runc could not start a command: Docker's error (its `State.Error`) and exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExecFailure {
    pub message: String,
    pub exit_code: i64,
}

/// Whether runc can start `argv` as PID 1. Docker 20.10 answers a start that cannot with 400 and
/// leaves the container `created` with this exit code and error:
/// `exec: "nosuch": executable file not found in $PATH` (127) for a name, `exec: "/no/such":
/// stat /no/such: no such file or directory` (127) for a path, `permission denied` (126) for a
/// directory or a file whose mode does not let it run. A file that may run starts (without a
/// `#!` line it then fails: see `run`).
pub(crate) fn check_exec(argv: &[String], fs: &Fs) -> Result<(), ExecFailure> {
    let failure = |detail: String, exit_code| ExecFailure {
        message: format!(
            "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: {detail}: unknown"
        ),
        exit_code,
    };
    let Some(command) = argv.first() else {
        return Err(failure("\"\": executable file not found in $PATH".into(), STATUS_NOT_FOUND));
    };
    if !command.contains('/') {
        return match fs.busybox && IMAGE_EXECUTABLES.contains(&command.as_str()) {
            true => Ok(()),
            false => Err(failure(format!("{command:?}: executable file not found in $PATH"), STATUS_NOT_FOUND)),
        };
    }
    let path = clean_path(command);
    if (fs.busybox && IMAGE_EXECUTABLES.iter().any(|e| path == format!("/bin/{e}")))
        || (fs.files.contains_key(&path) && fs.executables.contains(&path))
    {
        Ok(())
    } else if fs.dirs.contains(&path) || fs.files.contains_key(&path) {
        Err(failure(format!("{command:?}: permission denied"), 126))
    } else {
        Err(failure(format!("{command:?}: stat {command}: no such file or directory"), STATUS_NOT_FOUND))
    }
}

/// What a container's processes see of its file system.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fs {
    /// Directories, by cleaned absolute path.
    pub dirs: BTreeSet<String>,
    /// Regular files the model knows the contents of (besides busybox's), by cleaned path.
    pub files: BTreeMap<String, String>,
    /// Those of `files` whose mode lets them be executed.
    pub executables: BTreeSet<String>,
    /// The targets of its read-only mounts (cleaned).
    pub read_only: BTreeSet<String>,
    /// Whether the image is the test image's busybox (not `FROM scratch`).
    pub busybox: bool,
}

impl Fs {
    /// A container's file system with these mounts (target, read-only) and files (absolute
    /// paths); `busybox`: not `FROM scratch`.
    pub(crate) fn new<'a>(
        mounts: impl IntoIterator<Item = (&'a str, bool)>,
        files: &BTreeMap<String, String>,
        busybox: bool,
    ) -> Fs {
        let base = BASE_DIRECTORIES.iter().filter(|d| busybox || **d != "/bin");
        let mut fs = Fs { dirs: base.map(|d| d.to_string()).collect(), busybox, ..Fs::default() };
        for (target, read_only) in mounts {
            let target = clean_path(target);
            fs.add_dir(&target);
            if read_only {
                fs.read_only.insert(target);
            }
        }
        for (path, contents) in files {
            let path = clean_path(path);
            if let Some(parent) = parent_of(&path) {
                fs.add_dir(&parent);
            }
            fs.files.insert(path, contents.clone());
        }
        fs
    }

    /// `path` and the directories above it.
    fn add_dir(&mut self, path: &str) {
        let mut path = path.to_string();
        while path != "/" && self.dirs.insert(path.clone()) {
            path = parent_of(&path).unwrap_or_else(|| "/".into());
        }
    }
}

/// The directory `path` (cleaned, absolute) is in; `None` for `/`.
pub(crate) fn parent_of(path: &str) -> Option<String> {
    match path.rfind('/') {
        _ if path == "/" => None,
        Some(0) => Some("/".into()),
        Some(i) => Some(path[..i].to_string()),
        None => None,
    }
}

/// The file system of a busybox container with these mount targets and no other files.
#[cfg(test)]
pub(crate) fn directories<'a>(mount_targets: impl IntoIterator<Item = &'a str>) -> Fs {
    Fs::new(mount_targets.into_iter().map(|t| (t, false)), &BTreeMap::new(), true)
}

/// The applet a command names: `/bin/sleep` -> `sleep`.
fn executable_name(command: &str) -> &str {
    command.rsplit('/').next().unwrap_or(command)
}
