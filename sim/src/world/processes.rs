//! Engine processes: their engines, their clocks, and the process faults (`engine-crash` and
//! `crash-between-writes` strike a process, `clock-skew` puts its wall clock off).
//!
//! *Guarantees*: a crashed process loses all its memory (a fresh engine boots) and receives nothing
//! until it restarts; operation ids of a new incarnation never collide with an earlier one's, so a
//! late reply to a dead incarnation is never taken for the new one's.
//!
//! *Caveats*: a skewed clock stays skewed after faults heal: skew is not a failure that ends, and the
//! engine must tolerate it for good (lease expiry is judged on monotonic clocks).

use super::env::{Env, Event};
use super::latency::Latency;
use drydock_engine::{Engine, MonoTime, Now, WallTime};
use drydock_faults::FaultKind;
use rand_core::RngCore;
use std::time::Duration;

/// Engine processes: how many, and the magnitudes of the process faults (`engine-crash`,
/// `crash-between-writes`, `clock-skew`).
#[derive(Clone, Debug)]
pub struct ProcessKnobs {
    pub count: usize,
    /// A crashed process is back after this long.
    pub restart_after: Latency,
    /// A skewed wall clock is off by at least this much...
    pub skew_min: Duration,
    /// ...and less than this, ahead or behind.
    pub skew_max: Duration,
    /// Each engine's bound on runtime requests inside the runtime
    /// (`EngineConfig::max_runtime_in_flight`): lower than production's 32, so that the
    /// simulator's small worlds reach it.
    pub max_runtime_in_flight: usize,
    /// How long an engine waits for a change it gave up on before cancelling it for good
    /// (`EngineConfig::detached_patience`): shorter than production's 5 minutes, so that a hung
    /// change does not outlast the convergence bound.
    pub detached_patience: Duration,
    /// How long after a restart an engine takes requests of its earlier life to land
    /// (`EngineConfig::earlier_lives_patience`): longer than production's 30 s, as the
    /// simulated daemon's `runtime-overload` stalls last up to 45 s.
    pub earlier_lives_patience: Duration,
}

impl Default for ProcessKnobs {
    fn default() -> Self {
        ProcessKnobs {
            count: 1,
            restart_after: Latency::millis(100, 3_000),
            skew_min: Duration::from_millis(500),
            skew_max: Duration::from_secs(30),
            max_runtime_in_flight: 8,
            detached_patience: Duration::from_secs(30),
            earlier_lives_patience: Duration::from_secs(60),
        }
    }
}

/// Wall time at simulated time zero: 2026-01-01T00:00:00Z.
const EPOCH_MS: u64 = 1_767_225_600_000;

/// The world's true time at `mono`.
pub(super) fn true_now(mono: MonoTime) -> Now {
    Now::new(mono, WallTime(EPOCH_MS) + mono.as_duration())
}

/// The monotonic time at which the world's true wall clock reads `wall`.
pub(super) fn mono_at(wall: WallTime) -> MonoTime {
    MonoTime::from_duration(std::time::Duration::from_millis(wall.0.saturating_sub(EPOCH_MS)))
}

pub(super) struct Process {
    pub engine: Engine,
    /// When a wake is scheduled, if one is.
    pub wake_at: Option<MonoTime>,
    /// Incarnation, bumped by every crash.
    pub life: u32,
    /// Crashed, and not restarted yet.
    pub down: bool,
    /// How far this process's wall clock is ahead (or behind, if negative), in milliseconds.
    pub skew_ms: i64,
}

pub(super) struct Processes {
    knobs: ProcessKnobs,
    list: Vec<Process>,
}

impl Processes {
    /// Boot every process, drawing each one's engine seed and clock. `engine(index, life, seed)`
    /// makes a fresh engine.
    pub fn boot(knobs: &ProcessKnobs, env: &mut Env, engine: impl Fn(usize, u32, u64) -> Engine) -> Self {
        let list = (0..knobs.count)
            .map(|index| {
                let seed = env.rng.next_u64();
                let skew_ms = if env.fires(FaultKind::ClockSkew) { Self::draw_skew(knobs, env) } else { 0 };
                Process { engine: engine(index, 0, seed), wake_at: None, life: 0, down: false, skew_ms }
            })
            .collect();
        Processes { knobs: knobs.clone(), list }
    }

    fn draw_skew(knobs: &ProcessKnobs, env: &mut Env) -> i64 {
        let (min, max) = (knobs.skew_min.as_millis() as u64, knobs.skew_max.as_millis() as u64);
        let magnitude = (min + env.rng.next_u64() % (max - min).max(1)) as i64;
        if env.rng.next_u32().is_multiple_of(2) { magnitude } else { -magnitude }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn get(&self, process: usize) -> &Process {
        &self.list[process]
    }

    pub fn get_mut(&mut self, process: usize) -> &mut Process {
        &mut self.list[process]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Process> {
        self.list.iter()
    }

    pub fn is_down(&self, process: usize) -> bool {
        self.list[process].down
    }

    /// The time as `process` sees it: the world's monotonic time, and a wall clock that may be
    /// skewed.
    pub fn now(&self, process: usize, mono: MonoTime) -> Now {
        let wall = true_now(mono).wall.0 as i64 + self.list[process].skew_ms;
        Now::new(mono, WallTime(wall.max(0) as u64))
    }

    /// Kill `process`: a fresh engine from `engine(index, life, seed)` waits to boot (nothing of
    /// the old one survives) and the restart is scheduled. Returns when it restarts.
    pub fn crash(
        &mut self,
        env: &mut Env,
        process: usize,
        now: MonoTime,
        engine: impl Fn(usize, u32, u64) -> Engine,
    ) -> MonoTime {
        let seed = env.rng.next_u64();
        let p = &mut self.list[process];
        p.life += 1;
        p.down = true;
        p.wake_at = None;
        p.engine = engine(process, p.life, seed);
        let at = now + env.draw(self.knobs.restart_after);
        env.owe(at, Event::Restart { process });
        at
    }

    /// A crashed process is up again (it must be handed a full list of the store).
    pub fn restart(&mut self, process: usize) -> u32 {
        let p = &mut self.list[process];
        p.down = false;
        p.life
    }

    /// Schedule a wake for `process` at its engine's next wakeup, unless one is due earlier.
    pub fn schedule_wake(&mut self, env: &mut Env, process: usize) {
        let p = &mut self.list[process];
        if let Some(due) = p.engine.next_wakeup()
            && p.wake_at.is_none_or(|w| due < w)
        {
            p.wake_at = Some(due);
            env.at(due, Event::Wake { process });
        }
    }

    /// A wake fired at `now`: forget it if it was the one scheduled.
    pub fn woke(&mut self, process: usize, now: MonoTime) {
        let p = &mut self.list[process];
        if p.wake_at == Some(now) {
            p.wake_at = None;
        }
    }

    pub fn reconciles(&self) -> u64 {
        self.list.iter().map(|p| p.engine.stats().reconciles).sum()
    }
}
