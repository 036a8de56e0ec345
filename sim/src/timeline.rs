//! `sim report`'s page: one run, explained, drawn as a timeline in one self-contained HTML file.
//!
//! Guarantees: the page fetches nothing (its CSS and JavaScript are inline, its data is the run
//! as JSON in a `<script type="application/json">` with every `<` escaped, so no text of the run
//! can close the tag); the scenario, seed, digest, fault plan and each violated invariant with its
//! message and objects are in the static HTML, readable without JavaScript; every text of the run
//! the script puts on the page goes in as text, never as markup.
//!
//! The page draws a lane per object, runtime container and process, and the events as marks on
//! them. The horizontal axis is the event's number (`seq`), with the simulated time as tick
//! labels: a run has bursts of dozens of events at one nanosecond and quiet minutes between them
//! (the wait for convergence after the heal), so on a time axis the bursts, where the bugs are,
//! would be one pixel wide and most of the width would be empty.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::trace::{EventKind, ExplainedRun, TraceEvent};

const STYLE: &str = include_str!("timeline/timeline.css");
const SCRIPT: &str = include_str!("timeline/timeline.js");
/// Runs first, in `<head>`: records any error of the page's script in `#js-errors`.
const CATCH: &str = include_str!("timeline/catch.js");

/// How many events of the violation's objects the static page lists before it.
const BEFORE_VIOLATION: usize = 30;

/// Which kind of thing a lane follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneGroup {
    /// A store object (`event.object`).
    Object,
    /// A runtime container (`event.container`).
    Container,
    /// An engine process (`event.process`, named `p0`, `p1`...).
    Process,
    /// The events that concern no object, container or process (a heal, a disruption...).
    Run,
}

/// One row of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lane {
    pub group: LaneGroup,
    pub name: String,
    /// A violated invariant names it.
    pub violated: bool,
}

impl Lane {
    /// The lane an event with this group and name is drawn on.
    fn key(group: LaneGroup, name: &str) -> (LaneGroup, String) {
        (group, name.to_string())
    }
}

/// The lanes of a run, in the order the page draws them: those a violation names first (in the
/// order it names them), then the run's own lane (if an event needs it), the processes, the
/// objects and the containers, each in the order they first appear.
pub fn lanes(run: &ExplainedRun) -> Vec<Lane> {
    let mut seen: BTreeSet<(LaneGroup, String)> = BTreeSet::new();
    let (mut objects, mut containers, mut processes) = (Vec::new(), Vec::new(), BTreeSet::new());
    let mut run_lane = false;
    for event in &run.events {
        if let Some(object) = &event.object
            && seen.insert(Lane::key(LaneGroup::Object, object))
        {
            objects.push(object.clone());
        }
        if let Some(container) = &event.container
            && seen.insert(Lane::key(LaneGroup::Container, container))
        {
            containers.push(container.clone());
        }
        if let Some(process) = event.process {
            processes.insert(process);
        }
        run_lane |= event.object.is_none() && event.container.is_none() && event.process.is_none();
    }
    let mut out = Vec::new();
    let mut placed: BTreeSet<(LaneGroup, String)> = BTreeSet::new();
    for named in run.violations.iter().flat_map(|v| &v.objects) {
        // A name is an object's if an event has it as its object, else a container's.
        let group = if seen.contains(&Lane::key(LaneGroup::Object, named)) {
            LaneGroup::Object
        } else if seen.contains(&Lane::key(LaneGroup::Container, named)) {
            LaneGroup::Container
        } else {
            continue;
        };
        if placed.insert(Lane::key(group, named)) {
            out.push(Lane { group, name: named.clone(), violated: true });
        }
    }
    if run_lane {
        out.push(Lane { group: LaneGroup::Run, name: "run".to_string(), violated: false });
    }
    out.extend(processes.into_iter().map(|p| Lane {
        group: LaneGroup::Process,
        name: format!("p{p}"),
        violated: false,
    }));
    for (group, names) in [(LaneGroup::Object, objects), (LaneGroup::Container, containers)] {
        for name in names {
            if !placed.contains(&Lane::key(group, &name)) {
                out.push(Lane { group, name, violated: false });
            }
        }
    }
    out
}

/// For each event, the event that set it off, if the trace shows it: for a request (or what
/// happened to it), the event that delivered the trigger of the reconcile that issued it
/// (`cause.trigger_seq`); for a delivered watch event, the store write (or client write) that
/// made the version it carries (the last earlier write of the same object whose line ends with
/// `-> ok rv=N`, where the delivered line says `rv=N`). Following these links from an event walks
/// its causal chain back through the run.
pub fn causal_parents(events: &[TraceEvent]) -> Vec<Option<u64>> {
    let mut writes: BTreeMap<(&str, u64), u64> = BTreeMap::new();
    let mut parents = Vec::with_capacity(events.len());
    for event in events {
        let mut parent = event.cause.as_ref().and_then(|c| c.trigger_seq).filter(|&seq| seq < event.seq);
        if parent.is_none()
            && matches!(event.kind, EventKind::Deliver)
            && let (Some(object), Some(rv)) = (&event.object, delivered_rv(&event.line))
        {
            parent = writes.get(&(object.as_str(), rv)).copied();
        }
        if matches!(event.kind, EventKind::StoreWrite | EventKind::Client)
            && let (Some(object), Some(rv)) = (&event.object, written_rv(&event.line))
        {
            writes.insert((object.as_str(), rv), event.seq);
        }
        parents.push(parent);
    }
    parents
}

/// `N` of a line that ends with `-> ok rv=N`.
fn written_rv(line: &str) -> Option<u64> {
    let (_, rv) = line.trim_end().rsplit_once("-> ok rv=")?;
    rv.parse().ok()
}

/// `N` of the first `rv=N` in a line.
fn delivered_rv(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("rv=")?;
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
    digits.parse().ok()
}

/// How the page draws a kind of event: its name (as in the JSON), words for the legend, colour
/// and shape. The script draws with this table; the legend is made from it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct MarkStyle {
    pub kind: &'static str,
    pub label: &'static str,
    pub colour: &'static str,
    pub shape: &'static str,
}

/// The style of each kind of event.
pub fn mark_style(kind: EventKind) -> MarkStyle {
    let (kind, label, colour, shape) = match kind {
        EventKind::Client => ("client", "client write", "#7b3fb5", "diamond"),
        EventKind::StoreWrite => ("store-write", "store write", "#1f5fbf", "square"),
        EventKind::StoreRead => ("store-read", "store read", "#4aa3df", "square-open"),
        EventKind::Runtime => ("runtime", "runtime call", "#e07b00", "triangle-up"),
        EventKind::Reply => ("reply", "reply", "#2e9e5b", "circle"),
        EventKind::Deliver => ("deliver", "watch delivery", "#0f8b8d", "triangle-down"),
        EventKind::RuntimeEvent => ("runtime-event", "runtime event", "#a0522d", "triangle-down-open"),
        EventKind::Process => ("process", "process crash / restart", "#222222", "cross"),
        EventKind::Fault => ("fault", "fault", "#d62728", "star"),
        EventKind::Heal => ("heal", "faults healed", "#17a34a", "bar"),
        EventKind::Other => ("other", "other", "#9a9a9a", "dot"),
    };
    MarkStyle { kind, label, colour, shape }
}

const KINDS: [EventKind; 11] = [
    EventKind::Client,
    EventKind::StoreWrite,
    EventKind::StoreRead,
    EventKind::Runtime,
    EventKind::Reply,
    EventKind::Deliver,
    EventKind::RuntimeEvent,
    EventKind::Process,
    EventKind::Fault,
    EventKind::Heal,
    EventKind::Other,
];

/// What the script reads.
#[derive(Serialize)]
struct PageData<'a> {
    run: &'a ExplainedRun,
    lanes: &'a [Lane],
    parents: Vec<Option<u64>>,
    styles: Vec<MarkStyle>,
}

/// The page: one self-contained HTML document (see the module's guarantees).
pub fn render_html(run: &ExplainedRun) -> String {
    let lanes = lanes(run);
    let data = PageData {
        run,
        lanes: &lanes,
        parents: causal_parents(&run.events),
        styles: KINDS.iter().map(|&k| mark_style(k)).collect(),
    };
    // Serialising plain structs with string keys cannot fail; if it ever did, the page says so.
    let json = serde_json::to_string(&data)
        .unwrap_or_else(|e| serde_json::json!({ "error": format!("cannot serialise the run: {e}") }).to_string());
    let mut page = String::with_capacity(json.len() + STYLE.len() + SCRIPT.len() + 16_384);
    let title = format!("{} seed {}", run.scenario, run.seed);
    let verdict = if run.violations.is_empty() { "ok" } else { "FAILED" };
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>drydock report: {}</title>\n<style>\n{STYLE}</style>\n<script>\n{CATCH}</script>\n</head>\n<body>\n\
         <div id=\"js-errors\" data-errors=\"0\" hidden></div>\n",
        escape(&title)
    );
    header(&mut page, run, verdict);
    violations(&mut page, run);
    controls(&mut page);
    page.push_str(
        "<main id=\"main\">\n<div id=\"timeline-wrap\" tabindex=\"0\"><div id=\"timeline-spacer\">\
         <canvas id=\"timeline\" data-marks=\"0\" data-lanes=\"0\"></canvas></div></div>\n\
         <aside id=\"details\"><h2>Event</h2><p class=\"hint\">Click a mark on the timeline (or an event \
         below) to see what it was, what it changed and what caused it.</p></aside>\n</main>\n\
         <noscript><p class=\"noscript\">The timeline needs JavaScript; the run's facts, its violation and \
         the events before it are on this page without it.</p></noscript>\n",
    );
    before_violation(&mut page, run);
    page.push_str("<script type=\"application/json\" id=\"run-data\">");
    page.push_str(&json.replace('<', "\\u003c"));
    page.push_str("</script>\n<script>\n");
    page.push_str(SCRIPT);
    page.push_str("</script>\n</body>\n</html>\n");
    page
}

fn header(page: &mut String, run: &ExplainedRun, verdict: &str) {
    let end = run.events.last().map_or(0, |e| e.at_nanos);
    let _ = write!(
        page,
        "<header>\n<h1>{scenario} <span class=\"seed\">seed {seed}</span> <span class=\"verdict {class}\">{verdict}</span></h1>\n\
         <dl class=\"facts\">\
         <div><dt>scenario</dt><dd id=\"fact-scenario\">{scenario}</dd></div>\
         <div><dt>seed</dt><dd id=\"fact-seed\">{seed}</dd></div>\
         <div><dt>events</dt><dd id=\"fact-events\">{events}</dd></div>\
         <div><dt>simulated time</dt><dd>{end}</dd></div>\
         <div class=\"wide\"><dt>digest</dt><dd><code id=\"fact-digest\">{digest}</code></dd></div>\
         <div class=\"wide\"><dt>fault plan</dt><dd id=\"fact-faults\">{faults}</dd></div>\
         </dl>\n</header>\n",
        scenario = escape(&run.scenario),
        seed = run.seed,
        class = verdict.to_ascii_lowercase(),
        events = run.events.len(),
        end = seconds(end),
        digest = escape(&run.digest),
        faults = escape(if run.faults.is_empty() { "none" } else { &run.faults }),
    );
}

fn violations(page: &mut String, run: &ExplainedRun) {
    page.push_str("<section id=\"violations\">\n");
    if run.violations.is_empty() {
        page.push_str("<p class=\"ok\">No invariant was violated in this run.</p>\n");
    }
    for (i, v) in run.violations.iter().enumerate() {
        let _ = write!(
            page,
            "<div class=\"violation\" id=\"violation-{i}\" data-seq=\"{seq}\">\
             <h2>Invariant violated: <code class=\"invariant\">{invariant}</code></h2>\
             <p class=\"message\">{message}</p>\
             <p class=\"when\">found after event <a href=\"#\" data-seq=\"{seq}\">#{seq}</a> at {at}</p>",
            invariant = escape(&v.invariant),
            message = escape(&v.message),
            seq = v.seq,
            at = seconds(v.at_nanos),
        );
        if !v.objects.is_empty() {
            page.push_str("<p class=\"objects\">names: ");
            for (j, object) in v.objects.iter().enumerate() {
                if j > 0 {
                    page.push_str(", ");
                }
                let _ = write!(page, "<code class=\"object\">{}</code>", escape(object));
            }
            page.push_str("</p>");
        }
        page.push_str("</div>\n");
    }
    page.push_str("</section>\n");
}

fn controls(page: &mut String) {
    page.push_str(
        "<section id=\"controls\">\
         <input id=\"filter\" type=\"search\" placeholder=\"filter: object, container or controller\" \
         aria-label=\"filter lanes by object, container or controller\">\
         <button id=\"zoom-fit\" type=\"button\">whole run</button>\
         <button id=\"zoom-violation\" type=\"button\">around the violation</button>\
         <button id=\"zoom-in\" type=\"button\" title=\"zoom in (or Ctrl+wheel)\">+</button>\
         <button id=\"zoom-out\" type=\"button\" title=\"zoom out (or Ctrl+wheel)\">&minus;</button>\
         <span id=\"view-range\"></span>\
         <span class=\"help\">drag or Shift+wheel to pan</span>\
         </section>\n<section id=\"legend\">",
    );
    for kind in KINDS {
        let style = mark_style(kind);
        let _ = write!(
            page,
            "<span class=\"key\"><svg width=\"14\" height=\"14\" viewBox=\"-7 -7 14 14\">{}</svg>{}</span>",
            svg_shape(style.shape, style.colour),
            escape(style.label)
        );
    }
    page.push_str(
        "<span class=\"key\"><svg width=\"14\" height=\"14\" viewBox=\"-7 -7 14 14\">\
         <circle r=\"6\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/></svg>a fault fired</span>\
         <span class=\"key\"><svg width=\"14\" height=\"14\" viewBox=\"-7 -7 14 14\">\
         <line x1=\"0\" y1=\"-7\" x2=\"0\" y2=\"7\" stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/></svg>\
         invariant violated</span></section>\n",
    );
}

/// The legend's picture of a shape, as the script draws it.
fn svg_shape(shape: &str, colour: &str) -> String {
    match shape {
        "diamond" => format!("<path d=\"M0-5 5 0 0 5-5 0Z\" fill=\"{colour}\"/>"),
        "square" => format!("<rect x=\"-4\" y=\"-4\" width=\"8\" height=\"8\" fill=\"{colour}\"/>"),
        "square-open" => format!(
            "<rect x=\"-3.5\" y=\"-3.5\" width=\"7\" height=\"7\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>"
        ),
        "triangle-up" => format!("<path d=\"M0-5 5 4-5 4Z\" fill=\"{colour}\"/>"),
        "triangle-down" => format!("<path d=\"M0 5 5-4-5-4Z\" fill=\"{colour}\"/>"),
        "triangle-down-open" => {
            format!("<path d=\"M0 5 5-4-5-4Z\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>")
        }
        "circle" => format!("<circle r=\"4\" fill=\"{colour}\"/>"),
        "cross" => format!("<path d=\"M-4-4 4 4M4-4-4 4\" stroke=\"{colour}\" stroke-width=\"2\"/>"),
        "star" => format!("<path d=\"M0-6 1.8-1.8 6 0 1.8 1.8 0 6-1.8 1.8-6 0-1.8-1.8Z\" fill=\"{colour}\"/>"),
        "bar" => format!("<rect x=\"-1.5\" y=\"-6\" width=\"3\" height=\"12\" fill=\"{colour}\"/>"),
        _ => format!("<circle r=\"2\" fill=\"{colour}\"/>"),
    }
}

/// The last events of the violation's objects up to it, as a list (JavaScript makes each one open
/// in the details panel).
fn before_violation(page: &mut String, run: &ExplainedRun) {
    let Some(v) = run.violations.first() else { return };
    let named: BTreeSet<&str> = v.objects.iter().map(String::as_str).collect();
    let concerns = |e: &&TraceEvent| {
        e.object.as_deref().is_some_and(|o| named.contains(o))
            || e.container.as_deref().is_some_and(|c| named.contains(c))
    };
    let mut last: Vec<&TraceEvent> = run.events.iter().filter(|e| e.seq <= v.seq).filter(concerns).collect();
    if last.is_empty() {
        last = run.events.iter().filter(|e| e.seq <= v.seq).collect();
    }
    let first = last.len().saturating_sub(BEFORE_VIOLATION);
    let _ = write!(
        page,
        "<section id=\"before\"><h2>The last {} events of the violation's objects before it</h2>\n<ol>",
        last.len() - first
    );
    for event in &last[first..] {
        let class =
            if event.faults.is_empty() && !matches!(event.kind, EventKind::Fault) { "" } else { " class=\"fault\"" };
        let _ = write!(
            page,
            "<li{class}><a href=\"#\" data-seq=\"{seq}\"><span class=\"seq\">#{seq}</span> <code>{line}</code></a></li>",
            seq = event.seq,
            line = escape(&event.line)
        );
    }
    page.push_str("</ol></section>\n");
}

/// Simulated nanoseconds as the trace writes them: `12.000345s`.
fn seconds(nanos: u64) -> String {
    drydock_engine::time::MonoTime(nanos).to_string()
}

/// Text as HTML text or attribute value.
fn escape(text: &str) -> String {
    crate::markup::escape(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Cause, ExplainedViolation, FieldChange};

    fn event(seq: u64, kind: EventKind, line: &str) -> TraceEvent {
        TraceEvent { seq, at_nanos: seq * 1_000, line: line.to_string(), kind, ..TraceEvent::default() }
    }

    /// A client creates a namespace; p0 sees it and writes a finalizer; p1 sees that write and
    /// creates a container for it; a fault fires; a message tries to close the script tag.
    fn fixture() -> ExplainedRun {
        let cause = |trigger_seq| Cause {
            process: 0,
            controller: "namespace".to_string(),
            key: "Namespace/ns-1".to_string(),
            reconcile: 1,
            trigger: Some("watch Added Namespace/ns-1 rv=1".to_string()),
            trigger_seq: Some(trigger_seq),
            issued_seq: Some(trigger_seq),
        };
        let object = |mut e: TraceEvent, o: &str| {
            e.object = Some(o.to_string());
            e
        };
        let mut write = object(
            event(3, EventKind::StoreWrite, "0.000003s p0 store #1 update Namespace/ns-1@1 -> ok rv=2"),
            "Namespace/ns-1",
        );
        write.process = Some(0);
        write.cause = Some(cause(2));
        write.diff = vec![FieldChange {
            path: "metadata.finalizers".to_string(),
            before: None,
            after: Some("[\"drydock\"]".to_string()),
        }];
        let mut deliver =
            object(event(4, EventKind::Deliver, "0.000004s p1 deliver Modified Namespace/ns-1 rv=2"), "Namespace/ns-1");
        deliver.process = Some(1);
        let mut create =
            event(5, EventKind::Runtime, "0.000005s p1 runtime #1 create ns-1-web [fault uncertain-create]");
        create.process = Some(1);
        create.container = Some("ns-1-web".to_string());
        create.faults = vec!["uncertain-create".to_string()];
        create.cause = Some(Cause { process: 1, trigger_seq: Some(4), ..cause(4) });
        ExplainedRun {
            scenario: "fixture".to_string(),
            seed: 7,
            digest: "abc123".to_string(),
            faults: "uncertain-create=0.5".to_string(),
            violations: vec![ExplainedViolation {
                invariant: "unique-owner-uid".to_string(),
                message: "two containers </script><script>alert(1)</script> for ns-1-web".to_string(),
                seq: 5,
                at_nanos: 5_000,
                objects: vec!["ns-1-web".to_string()],
            }],
            events: vec![
                object(
                    event(1, EventKind::Client, "0.000001s client create Namespace/ns-1 -> ok rv=1"),
                    "Namespace/ns-1",
                ),
                {
                    let mut e = object(
                        event(2, EventKind::Deliver, "0.000002s p0 deliver Added Namespace/ns-1 rv=1"),
                        "Namespace/ns-1",
                    );
                    e.process = Some(0);
                    e
                },
                write,
                deliver,
                create,
                event(6, EventKind::Heal, "0.000006s heal faults=none"),
            ],
        }
    }

    #[test]
    fn lanes_put_the_violation_first_then_the_run_processes_objects_and_containers() {
        let lanes = lanes(&fixture());
        let names: Vec<(LaneGroup, &str, bool)> =
            lanes.iter().map(|l| (l.group, l.name.as_str(), l.violated)).collect();
        assert_eq!(
            names,
            vec![
                (LaneGroup::Container, "ns-1-web", true),
                (LaneGroup::Run, "run", false),
                (LaneGroup::Process, "p0", false),
                (LaneGroup::Process, "p1", false),
                (LaneGroup::Object, "Namespace/ns-1", false),
            ]
        );
    }

    #[test]
    fn causal_parents_link_requests_to_triggers_and_deliveries_to_writes() {
        let run = fixture();
        // 1 client write; 2 delivers rv=1 (written by 1); 3 triggered by 2; 4 delivers rv=2
        // (written by 3); 5 triggered by 4; 6 nothing.
        assert_eq!(causal_parents(&run.events), vec![None, Some(1), Some(2), Some(3), Some(4), None]);
    }

    #[test]
    fn the_page_is_self_contained_and_states_the_violation_without_script() {
        let page = render_html(&fixture());
        assert!(page.starts_with("<!doctype html>"));
        for fetch in ["src=", "href=\"http", "@import", "url(", "fetch(", "XMLHttpRequest"] {
            assert!(!page.contains(fetch), "the page must fetch nothing, but it has {fetch:?}");
        }
        assert!(page.contains("<code class=\"invariant\">unique-owner-uid</code>"));
        assert!(page.contains("two containers &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; for ns-1-web"));
        assert!(page.contains("<code class=\"object\">ns-1-web</code>"));
        assert!(page.contains("<dd id=\"fact-seed\">7</dd>") && page.contains("abc123"));
        // The message appears escaped in the JSON too: exactly one script element closes per opened one.
        assert_eq!(page.matches("<script").count(), page.matches("</script>").count());
        assert_eq!(page.matches("</script>").count(), 3);
        let json = page
            .split("<script type=\"application/json\" id=\"run-data\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next());
        let value: serde_json::Value = serde_json::from_str(json.unwrap_or_default()).unwrap_or_default();
        assert_eq!(value["run"]["violations"][0]["message"], fixture().violations[0].message.as_str());
        assert_eq!(value["parents"][4], 4);
        assert_eq!(value["lanes"][0]["name"], "ns-1-web");
        // The static list before the violation: the events of its objects, the fault marked.
        assert!(page.contains("<li class=\"fault\"><a href=\"#\" data-seq=\"5\">"));
    }

    #[test]
    fn every_kind_has_its_own_look() {
        let looks: BTreeSet<(&str, &str)> =
            KINDS.iter().map(|&k| (mark_style(k).colour, mark_style(k).shape)).collect();
        assert_eq!(looks.len(), KINDS.len());
        let names: BTreeSet<String> =
            KINDS.iter().map(|&k| serde_json::to_value(k).map(|v| v.to_string()).unwrap_or_default()).collect();
        for k in KINDS {
            assert!(names.contains(&format!("\"{}\"", mark_style(k).kind)), "{:?} is named as serde names it", k);
        }
    }
}
