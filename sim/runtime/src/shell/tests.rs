//! The shell model against what Docker 20.10 with the busybox test image did (each expectation
//! was observed with `docker run` / `docker stop`; the conformance suite pins the main ones).

use super::*;

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn natural(args: &[&str]) -> Outcome {
    run(&argv(args), &directories(["/data/mounted"]), Signals::default()).0
}

/// What a script prints: (milliseconds after start, stream, text).
fn prints(s: &str, signals: Signals) -> Vec<(u64, Stream, String)> {
    let (_, printed) = run(&argv(&["sh", "-c", s]), &directories([]), signals);
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
    run(&argv(args), &directories([]), signals).0
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
