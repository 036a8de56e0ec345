//! A sweep's summary as JUnit XML, the test report format CI systems render.

use super::SweepSummary;
use crate::markup::escape;
use std::fmt::Write as _;

impl SweepSummary {
    /// The summary as a JUnit XML document: one `<testsuite>` holding one `<testcase>` per failing
    /// seed (named like `basic seed 17`, with a `<failure>`: its invariant as the type; its
    /// message, fault plan and `repro` command), one per nondeterministic seed (`basic seed 17
    /// determinism`, with the command `check` gives for it), then one for the seeds that passed
    /// (named like `basic seeds 0..60: 58 seeds passed`, with the shard if one; there even when
    /// none did, so a report always names the range). `tests` and `failures` count these test
    /// cases; `time` is the sweep's wall time, on the suite and the passing case (a seed's own
    /// time is not measured).
    ///
    /// *Guarantees*: well-formed XML 1.0 in UTF-8 whatever the messages hold: markup characters
    /// are escaped, and characters XML cannot carry at all (most control characters) are written
    /// as U+FFFD.
    pub fn junit(&self, check: impl Fn(u64) -> String) -> String {
        let failed_cases = self.failures.len() + self.nondeterministic.len();
        let tests = failed_cases + 1;
        let time = format!("{:.3}", self.wall_seconds);
        let classname = attr(&format!("drydock.sim.{}", self.scenario));
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        // Writing to a String cannot fail.
        let _ = writeln!(
            xml,
            "<testsuites name=\"drydock sim\" tests=\"{tests}\" failures=\"{failed_cases}\" errors=\"0\" time=\"{time}\">"
        );
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failed_cases}\" errors=\"0\" skipped=\"0\" time=\"{time}\">",
            attr(&format!("drydock sim {}", self.scenario)),
        );
        xml.push_str("    <properties>\n");
        let mut properties = vec![
            ("scenario", self.scenario.clone()),
            ("start", self.start.to_string()),
            ("end", self.end.to_string()),
            ("seeds", self.seeds.to_string()),
            ("failed_seeds", self.failures.len().to_string()),
            ("nondeterministic_seeds", self.nondeterministic.len().to_string()),
            ("determinism_checked", self.determinism_checked.to_string()),
            ("events", self.events.to_string()),
            ("sim_seconds", self.sim_seconds.to_string()),
        ];
        if let Some(size) = self.size {
            properties.push(("size", size.to_string()));
        }
        if let Some(faults) = &self.fault_selection {
            properties.push(("fault_selection", faults.clone()));
        }
        if let Some(run) = &self.shard {
            properties.push(("shard", run.shard().to_string()));
        }
        if let Some(merged) = &self.merged_from {
            properties.push(("merged_from_shards", merged.shards.to_string()));
        }
        if let Some(why) = &self.stopped {
            properties.push(("stopped", why.clone()));
        }
        for (name, value) in properties {
            let _ = writeln!(xml, "      <property name=\"{name}\" value=\"{}\"/>", attr(&value));
        }
        xml.push_str("    </properties>\n");
        for f in &self.failures {
            let _ = writeln!(
                xml,
                "    <testcase classname=\"{classname}\" name=\"{}\">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                attr(&self.seed_name(f.seed)),
                attr(&f.invariant),
                attr(&format!("seed {} [{}] {}", f.seed, f.invariant, f.message)),
                text(&format!(
                    "seed {} violated {} at {}: {}\nfaults: {}\nrepro: {}",
                    f.seed, f.invariant, f.at, f.message, f.faults, f.repro
                ))
            );
        }
        for seed in &self.nondeterministic {
            let _ = writeln!(
                xml,
                "    <testcase classname=\"{classname}\" name=\"{}\">\n      <failure type=\"nondeterministic\" message=\"{}\">{}</failure>\n    </testcase>",
                attr(&format!("{} determinism", self.seed_name(*seed))),
                attr(&format!("seed {seed}: two runs gave different digests")),
                text(&format!(
                    "seed {seed} is nondeterministic: two runs of it gave different trace digests\ncheck: {}",
                    check(*seed)
                ))
            );
        }
        let name = self.testcase_name();
        let passed = self.passed_seeds();
        let passed_name = format!("{name}: {passed} {} passed", if passed == 1 { "seed" } else { "seeds" });
        let _ =
            writeln!(xml, "    <testcase classname=\"{classname}\" name=\"{}\" time=\"{time}\">", attr(&passed_name));
        let _ = writeln!(
            xml,
            "      <system-out>{}</system-out>",
            text(&format!(
                "{name}: {} seeds, {} failed, {} nondeterministic, {} events, {:.0} simulated s",
                self.seeds,
                self.failures.len(),
                self.nondeterministic.len(),
                self.events,
                self.sim_seconds
            ))
        );
        xml.push_str("    </testcase>\n  </testsuite>\n</testsuites>\n");
        xml
    }

    /// One seed's test case: `basic seed 17`, `basic size 1000 seed 17`.
    fn seed_name(&self, seed: u64) -> String {
        match self.size {
            Some(size) => format!("{} size {size} seed {seed}", self.scenario),
            None => format!("{} seed {seed}", self.scenario),
        }
    }

    /// The seeds that ran and neither failed nor were nondeterministic.
    fn passed_seeds(&self) -> u64 {
        let bad: std::collections::BTreeSet<u64> =
            self.failures.iter().map(|f| f.seed).chain(self.nondeterministic.iter().copied()).collect();
        self.seeds.saturating_sub(bad.len() as u64)
    }

    /// The scenario and the seeds of the sweep: `basic seeds 0..60`, `basic seeds 0..60 shard 2/3`.
    fn testcase_name(&self) -> String {
        let mut name = self.scenario.clone();
        if let Some(size) = self.size {
            let _ = write!(name, " size {size}");
        }
        match (&self.shard, &self.merged_from) {
            (Some(run), _) => {
                let _ = write!(name, " seeds {}..{} shard {}", self.start, self.end, run.shard());
            }
            (None, Some(merged)) if !merged.missing.is_empty() || !merged.stopped.is_empty() => {
                let _ = write!(name, " seeds {}..{} (partial)", self.start, self.end);
            }
            (None, Some(_)) => {
                let _ = write!(name, " seeds {}..{}", self.start, self.end);
            }
            // What ran: the whole range, or the part of it before the sweep was stopped.
            (None, None) => {
                let _ = write!(name, " seeds {}..{}", self.start, self.start.saturating_add(self.seeds));
            }
        }
        name
    }
}

/// `value` escaped for an attribute between double quotes: line breaks and tabs as character
/// references, which a parser would otherwise normalise to spaces.
fn attr(value: &str) -> String {
    escape(value, true)
}

/// `value` escaped for element content.
fn text(value: &str) -> String {
    escape(value, false)
}
