//! The shell model against what Docker 20.10 with the busybox test image did (each expectation
//! was observed with `docker run` / `docker stop`; the conformance suite pins the main ones).

use super::run::Ran;
use super::*;

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn natural(args: &[&str]) -> Outcome {
    run(&argv(args), &directories(["/data/mounted"]), &Env::new(), Signals::default()).outcome
}

/// What a script prints: (milliseconds after start, stream, text).
fn prints(s: &str, signals: Signals) -> Vec<(u64, Stream, String)> {
    let printed = run(&argv(&["sh", "-c", s]), &directories([]), &Env::new(), signals).printed;
    printed.into_iter().map(|p| (p.after_ms, p.stream, p.text)).collect()
}

fn out(after_ms: u64, text: &str) -> (u64, Stream, String) {
    (after_ms, Stream::Stdout, text.to_string())
}

fn script(s: &str) -> Outcome {
    natural(&["sh", "-c", s])
}

fn exits(after_ms: u64, code: i64) -> Outcome {
    Outcome::Exits { after_ms, code }
}

/// `docker stop -t grace` `at_ms` after the start.
fn stopped(args: &[&str], at_ms: u64, grace_ms: u64) -> Outcome {
    let signals = Signals { term_at: Some(at_ms), kill_at: Some(at_ms + grace_ms) };
    run(&argv(args), &directories([]), &Env::new(), signals).outcome
}

#[test]
fn echo_and_seq_print_lines_where_their_output_is_redirected() {
    assert_eq!(
        prints("echo one; sleep 1; echo two >&2; echo gone >/dev/null; echo -n three four", Signals::default()),
        vec![out(0, "one"), (1_000, Stream::Stderr, "two".into()), out(1_000, "three four")]
    );
    assert_eq!(prints("seq 3", Signals::default()), vec![out(0, "1"), out(0, "2"), out(0, "3")]);
    assert_eq!(prints("seq 2 3 > file", Signals::default()), vec![]);
}

#[test]
fn a_loop_prints_each_period_until_the_limit_or_its_end() {
    let printed = prints("while true; do echo tick; sleep 1; done", Signals::default());
    assert_eq!(printed.len(), OUTPUT_LIMIT, "for ever: up to the limit");
    assert_eq!(&printed[..3], &[out(0, "tick"), out(1_000, "tick"), out(2_000, "tick")]);
    let stopped = Signals { term_at: Some(2_500), kill_at: Some(12_500) };
    let printed = prints("trap 'echo bye; exit 0' TERM; while true; do echo tick; sleep 1; done", stopped);
    assert_eq!(printed, vec![out(0, "tick"), out(1_000, "tick"), out(2_000, "tick"), out(3_000, "bye")]);
}

#[test]
fn scripts_that_end_exit_with_their_status() {
    for (s, code) in [
        ("exit 3", 3),
        ("exit 300", 44),
        ("exit -1", 2),
        ("exit abc", 2),
        ("nosuch", 127),
        ("nosuch; exit 5", 5),
        ("false || exit 7", 7),
        ("true && false", 1),
        ("echo hi; exit $?", 0),
        ("false; exit $?", 1),
        ("sleep", 1),
        ("sleep abc", 1),
        ("cat; ls >/dev/null; exit 4", 4),
        ("", 0),
        ("while true; do", 2),
        ("test -d /etc && test -d /dev && test -d /proc && test -d /sys", 0),
        ("test -d /tmp", 1),
        ("test -d /bin", 0),
        ("test -d /data/mounted && test -d /data/ && [ -d /data ]", 0),
        ("test -e /bin/sh", 0),
        ("! test -d /tmp", 0),
        ("if test -d /tmp; then exit 1; else exit 9; fi", 9),
        ("seq 1 2 >/dev/null", 0),
        ("/bin/nosuch", 127),
        ("/bin/true && /bin/false", 1),
        ("sh -c 'exit 6'", 6),
        ("until true; do sleep 1; done; exit 8", 8),
    ] {
        assert_eq!(script(s), exits(0, code), "{s}");
    }
}

#[test]
fn direct_commands() {
    assert_eq!(natural(&["true"]), exits(0, 0));
    assert_eq!(natural(&["false"]), exits(0, 1));
    assert_eq!(natural(&["echo", "hi"]), exits(0, 0));
    assert_eq!(natural(&["/bin/sleep", "0"]), exits(0, 0));
    assert_eq!(natural(&["busybox", "true"]), exits(0, 0));
    assert_eq!(natural(&["sh"]), exits(0, 0), "an empty standard input");
    assert_eq!(natural(&["sh", "-c"]), exits(0, 2), "-c requires an argument");
    assert_eq!(natural(&["sh", "x"]), exits(0, 2), "can't open 'x'");
    assert_eq!(natural(&["sleep", "0.3"]), exits(300, 0));
    assert_eq!(natural(&["sleep", "3600"]), exits(3_600_000, 0));
    assert_eq!(natural(&["sleep", "infinity"]), Outcome::Forever);
}

#[test]
fn finite_sleeps_add_up() {
    assert_eq!(script("sleep 1; sleep 0.5; exit 6"), exits(1_500, 6));
    assert_eq!(script("sleep 1 && false || sleep 2"), exits(3_000, 0));
    assert_eq!(script("sleep 1m; exit 1"), exits(60_000, 1));
}

#[test]
fn loops_run_for_ever_unless_they_end() {
    assert_eq!(script("while true; do sleep 1; done"), Outcome::Forever);
    assert_eq!(script("while :; do :; done"), Outcome::Forever, "a busy loop");
    assert_eq!(script("while true; do sleep 1; exit 4; done"), exits(1_000, 4));
    assert_eq!(script("while test -d /tmp; do sleep 1; done; exit 3"), exits(0, 3));
    assert_eq!(script("trap 'exit 0' TERM; while true; do sleep 0.1; done"), Outcome::Forever);
}

#[test]
fn stop_without_a_handler_kills_after_the_grace_period() {
    // PID 1 ignores TERM without a handler: killed (137) when the grace period ends.
    assert_eq!(stopped(&["sleep", "3600"], 100, 2_000), exits(2_100, KILLED));
    assert_eq!(stopped(&["sh", "-c", "while true; do sleep 0.1; done"], 300, 2_000), exits(2_300, KILLED));
    assert_eq!(stopped(&["sleep", "infinity"], 0, 1_000), exits(1_000, KILLED));
    // ...unless it ends by itself first.
    assert_eq!(stopped(&["sleep", "1"], 100, 5_000), exits(1_000, 0));
    assert_eq!(stopped(&["sh", "-c", "sleep 1; exit 6"], 100, 5_000), exits(1_000, 6));
}

#[test]
fn a_term_handler_runs_once_the_foreground_command_ends() {
    let looping = |action: &str, sleep: &str| format!("trap '{action}' TERM; while true; do sleep {sleep}; done");
    let stop = |s: &str, at, grace| stopped(&["sh", "-c", s], at, grace);
    assert_eq!(stop(&looping("exit 0", "0.1"), 300, 2_000), exits(300, 0), "at the end of the current sleep");
    assert_eq!(stop(&looping("exit 0", "0.1"), 350, 2_000), exits(400, 0));
    assert_eq!(stop(&looping("exit 3", "1"), 300, 5_000), exits(1_000, 3));
    assert_eq!(stop(&looping("exit", "0.1"), 300, 2_000), exits(300, 0), "the status before the trap");
    assert_eq!(stop(&looping("echo bye", "0.1"), 300, 2_000), exits(2_300, KILLED), "a handler that goes on");
    assert_eq!(stop(&looping("", "0.1"), 300, 2_000), exits(2_300, KILLED), "an ignored TERM");
    assert_eq!(stop(&looping("exit 0", "1"), 5_300, 500), exits(5_800, KILLED), "the sleep outlasts the grace");
    assert_eq!(stop("trap 'exit 0' TERM; sleep 3600", 300, 2_000), exits(2_300, KILLED), "a trap waits");
    assert_eq!(stop("trap 'exit 0' TERM; sleep infinity", 300, 1_000), exits(1_300, KILLED));
    assert_eq!(stop("trap 'exit 0' TERM; while true; do :; done", 300, 2_000), exits(300, 0), "a busy loop");
    for signal in ["SIGTERM", "15", "term"] {
        let s = format!("trap 'exit 0' INT {signal}; while true; do sleep 0.1; done");
        assert_eq!(stop(&s, 300, 2_000), exits(300, 0), "{signal}");
    }
    // PID 1 without a handler loses the TERM: a handler set afterwards never sees it.
    let late = "sleep 1; trap 'exit 0' TERM; while true; do sleep 0.1; done";
    assert_eq!(stop(late, 500, 2_000), exits(2_500, KILLED), "TERM came before the trap");
    // A stop the instant the script starts reaches it after its first commands (on Docker, the
    // stop comes milliseconds after the start: `runtime diff` saw the trap run).
    assert_eq!(stop(&looping("exit 0", "0.1"), 0, 2_000), exits(100, 0), "the trap is set before TERM comes");
    // A stop long after the start skips whole loop periods (and stays exact).
    assert_eq!(stop(&looping("exit 2", "0.7"), 3_600_000, 10_000), exits(3_600_100, 2));
}

#[test]
fn exec_replaces_the_shell() {
    let stop = |s: &str| stopped(&["sh", "-c", s], 300, 2_000);
    assert_eq!(stop("trap 'exit 0' TERM; exec sleep 3600"), exits(2_300, KILLED), "sleep is PID 1 now");
    assert_eq!(stop("exec sh -c \"trap 'exit 5' TERM; while true; do sleep 0.1; done\""), exits(300, 5));
    assert_eq!(script("exec false; exit 0"), exits(0, 1));
}

#[test]
fn only_image_executables_can_be_pid_1() {
    for ok in [&["sleep", "1"][..], &["/bin/sh", "-c", "x"], &["busybox", "true"], &["/bin/../bin/true"]] {
        assert_eq!(check_exec(&argv(ok), &directories([])), Ok(()), "{ok:?}");
    }
    let failure = check_exec(&argv(&["nosuch"]), &directories([])).expect_err("not in the image");
    assert_eq!(failure.exit_code, 127);
    assert_eq!(
        failure.message,
        "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"nosuch\": executable file not found in $PATH: unknown"
    );
    let failure = check_exec(&argv(&["/no/such"]), &directories([])).expect_err("no such file");
    assert!(failure.message.contains("exec: \"/no/such\": stat /no/such: no such file or directory"), "{failure:?}");
    for builtin in ["exit", "test", "trap"] {
        assert!(
            check_exec(&argv(&[builtin, "0"]), &directories([])).is_err(),
            "{builtin} is a shell builtin, not a file"
        );
    }
    assert_eq!(check_exec(&argv(&["/bin"]), &directories([])).map_err(|f| f.exit_code), Err(126));
}

#[test]
fn paths_are_cleaned_as_go_does() {
    for (path, clean) in [
        ("/a/b/", "/a/b"),
        ("//a//b", "/a/b"),
        ("/a/./b/../c", "/a/c"),
        ("/..", "/"),
        ("/d/../", "/"),
        ("a/../..", ".."),
    ] {
        assert_eq!(clean_path(path), clean, "{path}");
    }
}

#[test]
fn a_term_sent_as_the_script_starts_finds_its_first_trap_set() {
    let script = ["sh", "-c", "trap 'exit 7' TERM; while true; do sleep 1; done"];
    assert_eq!(stopped(&script, 0, 2_000), exits(1_000, 7), "the trap runs once the current sleep ends");
    assert_eq!(stopped(&["sh", "-c", "sleep 1; trap 'exit 7' TERM; sleep 5"], 0, 2_000), exits(2_000, 137), "lost");
}

/// A run of `sh -c SCRIPT` in a container with `files` (executable: those named in `exec`),
/// environment `env`, a read-only mount at `/ro`.
fn ran_in(s: &str, files: &[(&str, &str)], executable: &[&str], env: &[(&str, &str)]) -> Ran {
    let files: BTreeMap<String, String> = files.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
    let mut fs = Fs::new([("/ro", true), ("/data", false)], &files, true);
    fs.executables = executable.iter().map(|p| p.to_string()).collect();
    let env: Env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    run(&argv(&["sh", "-c", s]), &fs, &environment(&env, "0123456789ab"), Signals::default())
}

/// What `sh -c SCRIPT` prints, stream by stream, and its status (all at once).
fn printed(s: &str) -> (Vec<String>, Vec<String>, i64) {
    let ran = ran_in(s, &[], &[], &[]);
    lines_and_status(ran)
}

fn lines_and_status(ran: Ran) -> (Vec<String>, Vec<String>, i64) {
    let of = |stream| ran.printed.iter().filter(|p| p.stream == stream).map(|p| p.text.clone()).collect();
    let Outcome::Exits { code, .. } = ran.outcome else { panic!("ends: {ran:?}") };
    (of(Stream::Stdout), of(Stream::Stderr), code)
}

fn lines(text: &[&str]) -> Vec<String> {
    text.iter().map(|s| s.to_string()).collect()
}

#[test]
fn variables_expand_from_the_environment_and_assignments() {
    let ran = ran_in(
        "echo $FOO ${FOO}x \"$SP\" $SP; echo [$NOPE]; X=1; echo $X; Y=2 sh -c 'echo [$Y]'; echo [$Y]; \
         export Z=3; sh -c 'echo $Z'; echo $HOSTNAME $HOME $PATH; echo $0 $#",
        &[],
        &[],
        &[("FOO", "bar"), ("SP", "a  b")],
    );
    assert_eq!(
        lines_and_status(ran).0,
        lines(&[
            "bar barx a  b a b",
            "[]",
            "1",
            "[2]",
            "[]",
            "3",
            "0123456789ab / /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "sh 0"
        ])
    );
    assert_eq!(
        printed("X=1; sh -c 'echo [$X]'; export X; sh -c 'echo [$X]'; unset X; echo [$X]").0,
        ["[]", "[1]", "[]"]
    );
    let bad_name = printed("export 1x=2; echo on");
    assert_eq!(bad_name, (vec![], lines(&["sh: export: line 0: 1x: bad variable name"]), 2), "the shell exits");
}

#[test]
fn for_loops_and_printf() {
    assert_eq!(
        printed("for x in a \"b c\" $HOME; do echo \"[$x]\"; done; printf '%s-%d|\\n' a 1 b 2").0,
        ["[a]", "[b c]", "[/]", "a-1|", "b-2|"]
    );
    assert_eq!(printed("false; for x in; do :; done; echo $?").0, ["0"]);
    assert_eq!(printed("printf abc; printf 'd\\n'; printf x").0, ["abcd", "x"], "lines end with their newline");
    assert_eq!(printed("printf '%d\\n' zz"), (lines(&["0"]), lines(&["sh: invalid number 'zz'"]), 1));
    assert_eq!(printed("printf '%5s' x; echo never"), (vec![], vec![], 2), "beyond the model: ends with 2");
}

#[test]
fn pipelines_feed_each_member_the_one_before() {
    assert_eq!(printed("seq 12 | grep 1 | wc -l; echo a:b | tr : ' '; seq 5 | head -n 2").0, ["4", "a b", "1", "2"]);
    assert_eq!(printed("false | true; echo $?; true | false").2, 1, "the last member's status");
    assert_eq!(printed("X=1 | true; echo [$X]; exit 3 | true; echo on").0, ["[]", "on"], "members are subshells");
    assert_eq!(printed("echo err >&2 | cat; echo out 2>&1 | tr a-z A-Z"), (lines(&["OUT"]), lines(&["err"]), 0));
    // Members run together: the pipeline lasts as long as the longest; a reader waits for its
    // writer.
    assert_eq!(script("sleep 1 | sleep 2; exit 4"), exits(2_000, 4));
    let ran = ran_in("sh -c 'echo a; sleep 1; echo b' | cat; echo c", &[], &[], &[]);
    let stamped: Vec<(u64, String)> = ran.printed.iter().map(|p| (p.after_ms, p.text.clone())).collect();
    assert_eq!(stamped, [(1_000, "a".to_string()), (1_000, "b".into()), (1_000, "c".into())]);
    assert_eq!(script("while true; do sleep 1; done | cat"), Outcome::Forever);
    assert_eq!(stopped(&["sh", "-c", "sleep 10 | cat"], 100, 1_000), exits(1_100, KILLED));
    // A trap waits for the whole pipeline, as for any foreground command.
    let trapped = "trap 'exit 5' TERM; while true; do sleep 1 | cat; done";
    assert_eq!(stopped(&["sh", "-c", trapped], 2_500, 5_000), exits(3_000, 5));
}

#[test]
fn files_written_are_read_back_and_kept() {
    let ran = ran_in("echo a > /f; echo b >> /f; cat /f; test -f /f && echo isf; echo x>/data/g", &[], &[], &[]);
    assert_eq!(
        ran.written,
        BTreeMap::from([("/f".to_string(), "a\nb\n".to_string()), ("/data/g".into(), "x\n".into())])
    );
    assert_eq!(lines_and_status(ran), (lines(&["a", "b", "isf"]), vec![], 0));
    assert_eq!(
        printed("echo x > /no/such/f; echo $?; echo x > /etc; echo x >/ro/f; cat < /nofile; echo $?"),
        (
            lines(&["1", "1"]),
            lines(&[
                "sh: can't create /no/such/f: nonexistent directory",
                "sh: can't create /etc: Is a directory",
                "sh: can't create /ro/f: Read-only file system",
                "sh: can't open /nofile: no such file"
            ]),
            0
        )
    );
    assert_eq!(printed("cat /nope 2>/dev/null; echo $?; echo a >/dev/null"), (lines(&["1"]), vec![], 0));
    assert_eq!(
        printed("touch /t; test -f /t && echo yes; cat /t; touch /etc /no/such/t; echo $?"),
        (lines(&["yes", "1"]), lines(&["touch: /no/such/t: No such file or directory"]), 0)
    );
    for s in ["mkdir -p /x; echo never", "rm -f /f", "chmod +x /f", "echo a | tee /f"] {
        assert_eq!(printed(s), (vec![], vec![], 2), "{s}: beyond the model");
    }
    // A loop that writes each time round is not periodic: it is followed to the step limit.
    assert_eq!(script("while true; do echo x >> /f; done"), Outcome::Forever);
}

#[test]
fn scripts_run_by_path() {
    let files = [("/s.sh", "#!/bin/sh\necho in $0 $1\nexit 3\n"), ("/n.sh", "echo noshebang\n")];
    let run_script = |s: &str, executable: &[&str]| lines_and_status(ran_in(s, &files, executable, &[]));
    assert_eq!(run_script("sh /s.sh arg", &[]), (lines(&["in /s.sh arg"]), vec![], 3));
    assert_eq!(run_script("/s.sh", &[]), (vec![], lines(&["sh: /s.sh: Permission denied"]), 126));
    assert_eq!(run_script("/s.sh q", &["/s.sh"]), (lines(&["in /s.sh q"]), vec![], 3));
    assert_eq!(run_script("/n.sh; echo $?", &["/n.sh"]), (lines(&["noshebang", "0"]), vec![], 0));
    assert_eq!(
        run_script("sh /nope.sh", &[]),
        (vec![], lines(&["sh: can't open '/nope.sh': No such file or directory"]), 2)
    );
    assert_eq!(run_script("nosuch; /no/such", &[]).1, ["sh: nosuch: not found", "sh: /no/such: not found"]);
    // As PID 1: runc runs a file whose mode lets it; without `#!` it cannot.
    let files: BTreeMap<String, String> = files.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
    let mut fs = Fs::new([], &files, true);
    assert_eq!(check_exec(&argv(&["/s.sh"]), &fs).map_err(|f| f.exit_code), Err(126), "permission denied");
    fs.executables = ["/s.sh".to_string(), "/n.sh".into()].into();
    assert_eq!(check_exec(&argv(&["/s.sh", "a1"]), &fs), Ok(()));
    let pid_1 = |args: &[&str]| lines_and_status(run(&argv(args), &fs, &Env::new(), Signals::default()));
    assert_eq!(pid_1(&["/s.sh", "a1"]), (lines(&["in /s.sh a1"]), vec![], 3));
    assert_eq!(pid_1(&["/n.sh"]), (vec![], lines(&["exec /n.sh: exec format error"]), 1));
}
