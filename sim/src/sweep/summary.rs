//! A sweep's summary as data (what `drydock sim run --json` prints), and the merge of the
//! summaries of a range's shards into the summary of the whole range.

use super::Shard;
use crate::checker::efficiency::WorkPeaks;
use crate::probes::Probe;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A sweep's summary: the JSON object `drydock sim run --json` prints as its last line, and what
/// [`merge`] reads back. Fields keep the names they have in that JSON.
///
/// *Guarantees*: the summary of a range equals the [`merge`] of the summaries of its shards, but
/// for the timing fields (`wall_seconds`, `seeds_per_second`, `time_acceleration`), `jobs` and
/// `merged_from`.
///
/// *Caveats*: a summary does not say which build of drydock ran it; merging the shards of two
/// builds gives a report of neither.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    pub scenario: String,
    /// The world's size, for a scenario with a size knob that was given one (`--size`).
    pub size: Option<usize>,
    /// How many seeds ran.
    pub seeds: u64,
    /// The range swept (or split into shards) is `start..end`.
    pub start: u64,
    pub end: u64,
    /// The shard of the range this sweep ran; `None` for the whole range or a merge.
    pub shard: Option<ShardRun>,
    /// The shards a merged summary was made of; `None` for a sweep.
    pub merged_from: Option<MergedFrom>,
    /// Worker threads (for a merge: of all the shards together).
    pub jobs: u64,
    /// Why the sweep ended before its last seed (`interrupted`, `time-up`), if it did.
    pub stopped: Option<String>,
    /// Each failing seed's first violation, ordered by seed.
    pub failures: Vec<FailureSummary>,
    /// The failures grouped by invariant and message pattern ([`FailureGroup`]): the most
    /// common first.
    #[serde(default)]
    pub groups: Vec<FailureGroup>,
    pub events: u64,
    /// Simulated time over all seeds, exactly (`sim_seconds` is derived from it).
    pub sim_nanos: u64,
    pub sim_seconds: f64,
    /// Wall time (for a merge: the slowest shard's, as shards run side by side).
    pub wall_seconds: f64,
    pub seeds_per_second: f64,
    /// Simulated seconds per wall second.
    pub time_acceleration: f64,
    /// How many times each fault kind fired, by name (every kind, maybe zero).
    pub faults: BTreeMap<String, u64>,
    /// The faults the seeds ran with, as the command took them (`default`, `none`, a list).
    pub fault_selection: Option<String>,
    /// The determinism self-check ran the seeds `s` with `(s - start) % check_every == 0` twice.
    pub check_every: Option<u64>,
    /// How many seeds ran twice (the sample, and every failing seed).
    pub determinism_checked: u64,
    /// Seeds whose two runs gave different digests, ordered.
    pub nondeterministic: Vec<u64>,
    /// Hits per probe, by name (every probe, maybe zero).
    pub probes: BTreeMap<String, u64>,
    /// The probes no seed reached among those some seed could reach by construction, in the
    /// catalog's order.
    pub probes_unreached: Vec<String>,
    /// The probes some seed could reach by construction (its world, workload and faults have
    /// what the probe needs), or did reach, in the catalog's order; the others are in `probes`
    /// with 0 hits and never called unreached.
    #[serde(default)]
    pub probes_reachable: Vec<String>,
    /// The most work any object of any seed did in one window after the heal.
    pub work_after_heal: WorkPeaks,
    /// What ran the sweep, as the caller names it (`drydock --version`'s `0.1.0 (commit ...)`);
    /// `None` if it did not say. Shards merge only if they name the same build, or one says none:
    /// seeds mean another world under another engine. Two builds of one `-dirty` tree look alike.
    #[serde(default)]
    pub build: Option<String>,
}

/// A failing seed in a [`SweepSummary`]: its first violation and how to run it again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureSummary {
    pub seed: u64,
    pub invariant: String,
    pub message: String,
    /// Simulated time of the violation, as the run prints it (`2.799669s`).
    pub at: String,
    /// The seed's fault plan, as a run prints it.
    pub faults: String,
    /// The command that runs this seed alone.
    pub repro: String,
}

/// Failing seeds that failed alike: the same invariant, and messages that differ only in their
/// numbers and ids (object names, uids, times): most likely one bug.
///
/// *Guarantees*: every failure of a summary is in exactly one group; groups are ordered by
/// count (the largest first), then by first seed; a group's seeds are ordered, its example
/// message and repro command are its lowest seed's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureGroup {
    pub invariant: String,
    /// The messages' common [`pattern`]: digits and hex ids replaced by `#`.
    pub pattern: String,
    /// How many seeds failed this way.
    pub count: u64,
    /// The lowest of them: the one to look at first.
    pub first_seed: u64,
    /// Its message, as it printed it.
    pub message: String,
    /// The command that runs the first seed alone.
    pub repro: String,
    /// Every seed of the group, ordered.
    pub seeds: Vec<u64>,
}

impl FailureGroup {
    /// The failures (in any order) grouped by invariant and message [`pattern`].
    pub fn of(failures: &[FailureSummary]) -> Vec<FailureGroup> {
        let mut groups: BTreeMap<(String, String), FailureGroup> = BTreeMap::new();
        for failure in failures {
            let pattern = pattern(&failure.message);
            let group = groups.entry((failure.invariant.clone(), pattern.clone())).or_insert_with(|| FailureGroup {
                invariant: failure.invariant.clone(),
                pattern,
                count: 0,
                first_seed: failure.seed,
                message: failure.message.clone(),
                repro: failure.repro.clone(),
                seeds: Vec::new(),
            });
            group.count += 1;
            group.seeds.push(failure.seed);
            if failure.seed < group.first_seed {
                group.first_seed = failure.seed;
                group.message = failure.message.clone();
                group.repro = failure.repro.clone();
            }
        }
        let mut groups: Vec<FailureGroup> = groups.into_values().collect();
        for group in &mut groups {
            group.seeds.sort_unstable();
        }
        groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.first_seed.cmp(&b.first_seed)));
        groups
    }
}

/// A violation message with what differs from seed to seed taken out: in every word (a run of
/// ASCII letters and digits) that holds a digit, a word of six or more hex digits only (an id,
/// a digest) becomes `#`, and in any other each run of digits becomes `#` (`c12` -> `c#`,
/// `2.5s` -> `#.#s`, `uid 3f9a0c` -> `uid #`). Words without digits are kept: they carry what
/// went wrong.
pub fn pattern(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.bytes().any(|b| b.is_ascii_digit()) {
            if word.len() >= 6 && word.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.push('#');
            } else {
                let mut in_digits = false;
                for c in word.chars() {
                    if c.is_ascii_digit() {
                        if !in_digits {
                            out.push('#');
                        }
                        in_digits = true;
                    } else {
                        out.push(c);
                        in_digits = false;
                    }
                }
            }
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The shard a [`SweepSummary`] ran and the seeds it covered: `first_seed`, `first_seed + count`,
/// ... up to `last_seed` (`None` when it ran no seed).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRun {
    pub index: u64,
    pub count: u64,
    pub first_seed: Option<u64>,
    pub last_seed: Option<u64>,
}

impl ShardRun {
    pub fn shard(&self) -> Shard {
        Shard { index: self.index, count: self.count }
    }
}

/// What a merged [`SweepSummary`] was made of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedFrom {
    /// The number of shards the range was split into.
    pub shards: u64,
    /// Shards not given (only with `allow_partial`), ordered.
    pub missing: Vec<u64>,
    /// Shards that stopped before their last seed (only with `allow_partial`), ordered.
    pub stopped: Vec<u64>,
}

impl SweepSummary {
    /// Set the wall time and the rates derived from it.
    pub fn set_wall_seconds(&mut self, wall_seconds: f64) {
        let wall = wall_seconds.max(1e-9);
        self.wall_seconds = wall_seconds;
        self.seeds_per_second = self.seeds as f64 / wall;
        self.time_acceleration = self.sim_seconds / wall;
    }

    /// No seed failed and every seed run twice gave its digest again.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.nondeterministic.is_empty()
    }

    /// How many seeds the range holds.
    pub fn range_seeds(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// How many seeds this sweep was to run: its shard's share of the range, or all of it.
    pub fn seeds_due(&self) -> u64 {
        match &self.shard {
            Some(run) => run.shard().len_of(self.range_seeds()),
            None => self.range_seeds(),
        }
    }
}

/// Why shard summaries do not [`merge`]. Inputs are numbered from 0 in the order given;
/// [`MergeError::describe`] names them as the caller likes (by file, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// Nothing to merge.
    NoInput,
    /// An input ran a whole range, not a shard of one.
    NotAShard { input: usize },
    /// An input is itself a merge.
    AlreadyMerged { input: usize },
    /// An input swept something else than the first input did.
    Mismatch { input: usize, field: &'static str, first: String, found: String },
    /// Two inputs ran the same shard.
    Duplicate { shard: Shard, inputs: (usize, usize) },
    /// Shards of the range not given.
    Missing { missing: Vec<u64>, count: u64 },
    /// An input stopped before its shard's last seed.
    Stopped { input: usize, shard: Shard, ran: u64, due: u64, why: String },
    /// An input contradicts itself (a seed outside its shard, a count that does not add up).
    Inconsistent { input: usize, what: String },
}

impl MergeError {
    /// The error with each input named by `name`.
    pub fn describe(&self, name: impl Fn(usize) -> String) -> String {
        match self {
            MergeError::NoInput => "no shard results given: nothing to merge".to_string(),
            MergeError::NotAShard { input } => format!(
                "{} is the result of a whole range (no --shard): only the shards of one range merge",
                name(*input)
            ),
            MergeError::AlreadyMerged { input } => {
                format!("{} is itself a merge: merge the shards' own results instead", name(*input))
            }
            MergeError::Mismatch { input, field, first, found } => format!(
                "{} has {field} {found}, but {} has {first}: merge only the shards of one sweep (same \
                 build, scenario, size, start, seeds, faults, determinism sampling and shard count)",
                name(*input),
                name(0)
            ),
            MergeError::Duplicate { shard, inputs: (a, b) } => {
                format!("shard {shard} is given twice: {} and {}; give each shard once", name(*a), name(*b))
            }
            MergeError::Missing { missing, count } => {
                let list: Vec<String> = missing.iter().map(|k| format!("{k}/{count}")).collect();
                let (noun, verb) = if missing.len() == 1 { ("shard", "is") } else { ("shards", "are") };
                format!(
                    "{noun} {} {verb} missing: give every shard of the range once (or --allow-partial to merge \
                     what there is)",
                    list.join(", ")
                )
            }
            MergeError::Stopped { input, shard, ran, due, why } => format!(
                "{} (shard {shard}) stopped early ({why}) after {ran} of its {due} seeds: run it again \
                 (or --allow-partial to merge what there is)",
                name(*input)
            ),
            MergeError::Inconsistent { input, what } => format!("{} is inconsistent: {what}", name(*input)),
        }
    }
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(|input| format!("input {}", input + 1)))
    }
}

impl std::error::Error for MergeError {}

/// The summary of a whole range from the summaries of its shards (in any order).
///
/// The inputs must be shards of one sweep: same scenario, size, range, fault selection,
/// determinism sampling and shard count `N`, each shard `1..=N` once and run to its end. With
/// `allow_partial`, missing shards and shards stopped early are merged anyway and listed in
/// [`MergedFrom`]; the result then covers only part of the range.
///
/// *Guarantees*: the merge of all the shards of a range equals the range's own summary but for
/// the timing fields, `jobs` and `merged_from`: counts are sums, failures and nondeterministic
/// seeds are ordered by seed, the work peaks are the largest of the shards'. `wall_seconds` is
/// the largest of the shards' (they run side by side), `jobs` their sum.
pub fn merge(shards: &[SweepSummary], allow_partial: bool) -> Result<SweepSummary, MergeError> {
    let first = shards.first().ok_or(MergeError::NoInput)?;
    let count = match (&first.shard, &first.merged_from) {
        (Some(run), _) => run.count,
        (None, Some(_)) => return Err(MergeError::AlreadyMerged { input: 0 }),
        (None, None) => return Err(MergeError::NotAShard { input: 0 }),
    };
    let mut by_index: BTreeMap<u64, usize> = BTreeMap::new();
    let mut stopped = Vec::new();
    for (input, summary) in shards.iter().enumerate() {
        if summary.merged_from.is_some() {
            return Err(MergeError::AlreadyMerged { input });
        }
        let run = summary.shard.ok_or(MergeError::NotAShard { input })?;
        let mismatch = |field, first: String, found: String| {
            (first != found).then_some(MergeError::Mismatch { input, field, first, found })
        };
        let show = |value: &dyn std::fmt::Debug| format!("{value:?}");
        let checks = [
            mismatch("scenario", show(&first.scenario), show(&summary.scenario)),
            mismatch("size", show(&first.size), show(&summary.size)),
            mismatch("start", first.start.to_string(), summary.start.to_string()),
            mismatch("range end (start + seeds)", first.end.to_string(), summary.end.to_string()),
            mismatch("fault selection", show(&first.fault_selection), show(&summary.fault_selection)),
            mismatch("determinism sampling (check_every)", show(&first.check_every), show(&summary.check_every)),
            mismatch("shard count", count.to_string(), run.count.to_string()),
            match (&first.build, &summary.build) {
                (Some(a), Some(b)) => mismatch("build", a.clone(), b.clone()),
                _ => None,
            },
        ];
        if let Some(error) = checks.into_iter().flatten().next() {
            return Err(error);
        }
        let shard = run.shard();
        if shard.index == 0 || shard.index > count {
            return Err(MergeError::Inconsistent { input, what: format!("shard {shard} does not exist") });
        }
        if let Some(earlier) = by_index.insert(shard.index, input) {
            return Err(MergeError::Duplicate { shard, inputs: (earlier, input) });
        }
        check_shard(input, summary, shard)?;
        let due = summary.seeds_due();
        if summary.seeds < due {
            if !allow_partial {
                let why = summary.stopped.clone().unwrap_or_else(|| "stopped".to_string());
                return Err(MergeError::Stopped { input, shard, ran: summary.seeds, due, why });
            }
            stopped.push(shard.index);
        }
    }
    let missing: Vec<u64> = (1..=count).filter(|k| !by_index.contains_key(k)).collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Missing { missing, count });
    }
    stopped.sort_unstable();

    let mut merged = SweepSummary {
        shard: None,
        merged_from: Some(MergedFrom { shards: count, missing, stopped }),
        stopped: shards.iter().find_map(|s| s.stopped.clone()),
        seeds: 0,
        jobs: 0,
        failures: Vec::new(),
        events: 0,
        sim_nanos: 0,
        determinism_checked: 0,
        nondeterministic: Vec::new(),
        work_after_heal: WorkPeaks::default(),
        faults: BTreeMap::new(),
        probes: BTreeMap::new(),
        probes_reachable: Vec::new(),
        ..first.clone()
    };
    let mut reachable: BTreeSet<String> = BTreeSet::new();
    let mut wall: f64 = 0.0;
    for summary in shards {
        merged.seeds += summary.seeds;
        merged.jobs += summary.jobs;
        merged.failures.extend(summary.failures.iter().cloned());
        merged.events = merged.events.saturating_add(summary.events);
        merged.sim_nanos = merged.sim_nanos.saturating_add(summary.sim_nanos);
        merged.determinism_checked += summary.determinism_checked;
        merged.nondeterministic.extend(&summary.nondeterministic);
        for (kind, n) in &summary.faults {
            *merged.faults.entry(kind.clone()).or_default() += n;
        }
        for (probe, hits) in &summary.probes {
            *merged.probes.entry(probe.clone()).or_default() += hits;
        }
        // Unreached probes were reachable too (a shard of an older drydock may list no
        // reachable ones).
        reachable.extend(summary.probes_reachable.iter().chain(&summary.probes_unreached).cloned());
        let (peaks, work) = (&mut merged.work_after_heal, &summary.work_after_heal);
        peaks.runtime_requests = peaks.runtime_requests.max(work.runtime_requests);
        peaks.store_writes = peaks.store_writes.max(work.store_writes);
        peaks.reconciles_per_object = peaks.reconciles_per_object.max(work.reconciles_per_object);
        wall = wall.max(summary.wall_seconds);
    }
    merged.failures.sort_by_key(|f| f.seed);
    merged.groups = FailureGroup::of(&merged.failures);
    merged.nondeterministic.sort_unstable();
    // As the sweep computes it, from the integer total: the same number as the whole range's.
    merged.sim_seconds = merged.sim_nanos as f64 / 1e9;
    // Reachable in the range: reachable in some shard, or reached. In the catalog's order (that
    // of `probes` in a shard's summary is by name): the first shard's catalog-ordered lists.
    reachable.extend(merged.probes.iter().filter(|(_, hits)| **hits > 0).map(|(probe, _)| probe.clone()));
    merged.probes_reachable = catalog_order(&reachable);
    merged.probes_unreached = merged
        .probes_reachable
        .iter()
        .filter(|probe| merged.probes.get(*probe).is_none_or(|hits| *hits == 0))
        .cloned()
        .collect();
    merged.set_wall_seconds(wall);
    Ok(merged)
}

/// Probe names in the catalog's order ([`Probe::ALL`]), names this build does not know last.
fn catalog_order(names: &BTreeSet<String>) -> Vec<String> {
    let mut known: Vec<(usize, &String)> = names
        .iter()
        .map(|name| {
            (Probe::from_name(name).and_then(|p| Probe::ALL.iter().position(|q| *q == p)).unwrap_or(usize::MAX), name)
        })
        .collect();
    known.sort();
    known.into_iter().map(|(_, name)| name.clone()).collect()
}

/// A shard's summary holds only its own seeds and adds up.
fn check_shard(input: usize, summary: &SweepSummary, shard: Shard) -> Result<(), MergeError> {
    let inconsistent = |what: String| Err(MergeError::Inconsistent { input, what });
    let in_shard = |seed: u64| seed < summary.end && shard.holds(summary.start, seed);
    if summary.seeds > summary.seeds_due() {
        return inconsistent(format!("it ran {} seeds, but shard {shard} has {}", summary.seeds, summary.seeds_due()));
    }
    let seeds = summary.failures.iter().map(|f| f.seed).chain(summary.nondeterministic.iter().copied());
    for seed in seeds {
        if !in_shard(seed) {
            return inconsistent(format!(
                "seed {seed} is not one of shard {shard}'s seeds of {}..{}",
                summary.start, summary.end
            ));
        }
    }
    let run =
        summary.shard.unwrap_or(ShardRun { index: shard.index, count: shard.count, first_seed: None, last_seed: None });
    let (start, range) = (summary.start, summary.range_seeds());
    let expected_first = if summary.seeds == 0 { None } else { shard.nth_seed(start, range, 0) };
    let expected_last = summary.seeds.checked_sub(1).and_then(|i| shard.nth_seed(start, range, i));
    if (run.first_seed, run.last_seed) != (expected_first, expected_last) {
        return inconsistent(format!(
            "it says it ran seeds {:?} to {:?}, but the first {} seeds of shard {shard} are {expected_first:?} to {expected_last:?}",
            run.first_seed, run.last_seed, summary.seeds
        ));
    }
    Ok(())
}
