//! `drydock sim report` in a real browser: the page of a real failing seed, opened by headless
//! Chromium (Debian's `chromium`, which `.ci/run` installs), must draw its timeline with no script
//! error and say which invariant broke and on which object.
//!
//! Without Chromium (and without `CI`) each test prints SKIPPED and passes; with `CI` set, a
//! missing Chromium fails it.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The example buggy scenario's seed 0: the namespace controller gives `rancher-desktop` an
/// ownerReference to itself.
const SCENARIO: &str = "rdd-namespaces-buggy";
const INVARIANT: &str = "no-owner-cycles";
const OFFENDER: &str = "Namespace/rancher-desktop";

/// How long one Chromium run may take (its first start in a fresh profile is slow).
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().map(PathBuf::from).find(|p| p.exists())
}

/// Chromium, or None after saying why the test is skipped (a failure when `CI` is set).
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI is set and chromium is required, but it is not installed"
        );
        eprintln!(
            "SKIPPED {test}: chromium not installed (apt-get install chromium); set CI=true to make this a failure"
        );
    }
    found
}

fn drydock(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_drydock")).args(args).current_dir(dir).output().unwrap()
}

/// Run headless Chromium on `page` (its address ending in `fragment`) with `args`, in its own
/// profile under `dir`, killed after [`BROWSER_TIMEOUT`].
fn browse(chromium: &Path, dir: &Path, page: &Path, fragment: &str, args: &[&str]) -> Output {
    let profile =
        dir.join(format!("profile-{}{}", args.first().unwrap_or(&"x").trim_start_matches('-'), fragment.len()));
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,900"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"])
        .args(args)
        .arg(format!("file://{}{fragment}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "chromium {args:?} did not finish in {BROWSER_TIMEOUT:?}; its stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The value of `attribute` on the first tag of the DOM that has `id="{id}"`.
fn attribute(dom: &str, id: &str, attribute: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let start = dom[..at].rfind('<')?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let value = tag.split(&format!("{attribute}=\"")).nth(1)?;
    Some(value[..value.find('"')?].to_string())
}

/// The console messages Chromium logged at error level (`--enable-logging=stderr`): lines such
/// as `[...:INFO:CONSOLE(12)] "Uncaught TypeError: ..."` or `:ERROR:CONSOLE`.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains("CONSOLE"))
        .filter(|line| line.contains("Uncaught") || line.contains(":ERROR:") || line.contains("Error"))
        .collect()
}

/// The first violation's event in the page's own data (`run-data`): its number and its line. Read
/// from the page, not written into the test, so a change of the seed's schedule (a new fault kind
/// drawn) does not need the test rewritten; that the event names the offender is checked here.
fn violating_event(html: &str) -> (u64, String) {
    let start = html.find("id=\"run-data\">").unwrap() + "id=\"run-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let violation = &data["run"]["violations"][0];
    assert_eq!(violation["invariant"], INVARIANT, "{violation}");
    let seq = violation["seq"].as_u64().unwrap();
    let event = data["run"]["events"].as_array().unwrap().iter().find(|e| e["seq"] == seq).unwrap();
    assert_eq!(event["object"], OFFENDER, "{event}");
    (seq, event["line"].as_str().unwrap().to_string())
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[test]
fn the_report_of_a_failing_seed_renders_in_a_headless_browser() {
    let test = "the_report_of_a_failing_seed_renders_in_a_headless_browser";
    let Some(chromium) = chromium_or_skip(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = drydock(&["sim", "report", "--scenario", SCENARIO, "--seed", "0"], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "sim report failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The default path, printed with its size.
    let page = dir.path().join(format!("{SCENARIO}-0.html"));
    let bytes = std::fs::metadata(&page).unwrap().len();
    assert!(stdout.contains(&format!("{SCENARIO}-0.html ({bytes} bytes)")), "{stdout}");
    assert!(stdout.contains(&format!("FAILED [{INVARIANT}]")), "{stdout}");
    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["http://", "https://", "src=", "@import", "url("] {
        assert!(!html.contains(fetch), "the page must fetch nothing, but it has {fetch:?}");
    }

    // The DOM after the page's script ran.
    let dump = browse(&chromium, dir.path(), &page, "", &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dump.stdout);
    let stderr = String::from_utf8_lossy(&dump.stderr);
    assert!(dump.status.success(), "chromium --dump-dom failed: {stderr}");
    assert_eq!(attribute(&dom, "js-errors", "data-errors").as_deref(), Some("0"), "script errors: {dom}");
    assert!(console_errors(&stderr).is_empty(), "console errors: {:?}", console_errors(&stderr));
    assert!(dom.contains("data-ready=\"true\""), "the page's script did not finish: {dom}");
    let marks: u64 = attribute(&dom, "timeline", "data-marks").and_then(|m| m.parse().ok()).unwrap_or(0);
    let lanes: u64 = attribute(&dom, "timeline", "data-lanes").and_then(|m| m.parse().ok()).unwrap_or(0);
    assert!(marks >= 4, "the script drew {marks} marks, want one per event and lane at least: {dom}");
    assert!(lanes >= 2, "the script drew {lanes} lanes: {dom}");
    assert!(dom.contains(&format!("<code class=\"invariant\">{INVARIANT}</code>")), "{dom}");
    assert!(dom.contains(OFFENDER), "{dom}");
    // The script opened the violation's event in the details panel: its line is there as text.
    let (seq, line) = violating_event(&html);
    let details = &dom[dom.find("id=\"details\"").unwrap()..];
    assert!(
        details.contains(&format!("Event #{seq}")) && details.contains(&escape_html(&line)),
        "want event #{seq} ({line}) in {details}"
    );

    // An address naming an event and a filter: the event's details, with its causal chain (the
    // delivery of rv=1 links to the client write that made it), and only the lanes that match.
    let linked = browse(&chromium, dir.path(), &page, "#seq=3&filter=rancher-desktop", &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&linked.stdout);
    assert_eq!(attribute(&dom, "js-errors", "data-errors").as_deref(), Some("0"), "script errors: {dom}");
    let details = &dom[dom.find("id=\"details\"").unwrap()..];
    assert!(
        details.contains("Event #3") && details.contains("deliver Added Namespace/rancher-desktop rv=1"),
        "{details}"
    );
    let chain = &details[details.find("class=\"chain\"").expect("a causal chain")..];
    assert!(chain.contains("data-seq=\"1\"") && chain.contains("client create Namespace/rancher-desktop"), "{chain}");
    let filtered: u64 = attribute(&dom, "timeline", "data-lanes").and_then(|m| m.parse().ok()).unwrap_or(0);
    assert!((1..lanes).contains(&filtered), "the filter left {filtered} of {lanes} lanes");

    // The screenshot: a PNG of the window, with the colours of a drawn page in it.
    let shot = dir.path().join("report.png");
    let taken = browse(&chromium, dir.path(), &page, "", &[&format!("--screenshot={}", shot.display())]);
    assert!(taken.status.success(), "chromium --screenshot failed: {}", String::from_utf8_lossy(&taken.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1400, 900));
    let channels = frame.color_type.samples();
    let colours: BTreeSet<&[u8]> = pixels[..frame.buffer_size()].chunks(channels).map(|p| &p[..3]).collect();
    assert!(colours.len() >= 50, "the screenshot has {} colours: blank or nearly", colours.len());
    // The violated lane's pink, the store write's blue and the watch delivery's teal are drawn.
    for (name, rgb) in
        [("violated lane", [0xfd, 0xe3, 0xe1]), ("store write", [0x1f, 0x5f, 0xbf]), ("delivery", [0x0f, 0x8b, 0x8d])]
    {
        assert!(
            colours.contains(&rgb[..]),
            "no {name} colour #{:02x}{:02x}{:02x} in the screenshot",
            rgb[0],
            rgb[1],
            rgb[2]
        );
    }
}

#[test]
fn sim_run_out_writes_a_report_beside_each_failing_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let out = drydock(
        &["sim", "run", "--scenario", SCENARIO, "--seeds", "3", "--out", "failing", "--check-determinism", "0"],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let failing = dir.path().join("failing");
    let mut schedules = 0;
    for seed in 0..3 {
        let schedule = failing.join(format!("{SCENARIO}-{seed}.json"));
        if !schedule.exists() {
            continue;
        }
        schedules += 1;
        let report = std::fs::read_to_string(failing.join(format!("{SCENARIO}-{seed}.html"))).unwrap();
        assert!(report.contains(&format!("seed {seed}")) && report.contains("Invariant violated"));
    }
    assert!(schedules > 0, "no seed of 0..3 failed: {stdout}");
    assert!(stdout.contains("reports (sim report) of the failing seeds written beside them"), "{stdout}");

    // And `sim report --schedule` draws the same run from the saved schedule.
    let schedule = failing.join(format!("{SCENARIO}-0.json"));
    let out = drydock(&["sim", "report", "--schedule", schedule.to_str().unwrap(), "--out", "again.html"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = std::fs::read_to_string(dir.path().join("again.html")).unwrap();
    let first = std::fs::read_to_string(failing.join(format!("{SCENARIO}-0.html"))).unwrap();
    assert_eq!(again, first, "the schedule's page differs from the seed's");
}
