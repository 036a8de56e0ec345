//! The container state machine, as Docker 20.10 runs it: created -> running -> exited, starts
//! that fail, stops that signal the main process, removals, and time.
//!
//! - A start publishes the ports first (Docker programs the network before runc runs the
//!   process), then runs the command. Either may fail: the container keeps its state (`created`,
//!   or `exited`) with `State.Error` and an exit code (127 or 126 for a command runc cannot run,
//!   else 128 unless it already had a non-zero one), and no event is emitted.
//! - The main process is `shell::run` in simulated time: one that ends later is due then
//!   ([`SimRuntime::next_due`], [`SimRuntime::advance`]), and so is one that ends at once, a
//!   moment (`BRIEFEST_RUN_MS`) after its start (Docker's start answers once the process runs,
//!   and shows it `running` until it has ended); one that never ends runs until stopped.
//! - A stop sends TERM and, after the grace period, KILL: the exit status is what the process
//!   does with them (137 when killed). [`SimRuntime::begin_stop`] takes the time Docker's does:
//!   the container runs until the process ends, and the stop answers then (the world's reply
//!   waits for it). `execute`'s stop applies at once, its `die` stamped with the time of the
//!   stop, for callers with no time between a request and its answer.
//! - A removal is `removing` from the moment it begins until it completes
//!   ([`SimRuntime::begin_removal`], [`SimRuntime::finish_removal`]); a remove request does both.

use super::SimRuntime;
use super::containers::SimContainer;
use super::not_found;
use super::shell::{self, KILLED, Outcome, Signals};
use drydock_engine::WallTime;
use drydock_engine::runtime::{ContainerState, EventAction, RuntimeError, RuntimeReply, RuntimeResult};

/// Docker's default stop timeout, used when the daemon shuts down.
const DAEMON_SHUTDOWN_GRACE_SECS: u32 = 10;

/// How long the briefest main process runs after its start answered (`sh -c 'exit 3'`: a few
/// ms on Docker 20.10, which shows it `running` meanwhile).
pub(crate) const BRIEFEST_RUN_MS: u64 = 1;

/// The exit code Docker records for a start that failed for any other reason than the command.
const START_FAILED_EXIT_CODE: i64 = 128;

impl SimRuntime {
    /// When the next running container's main process ends by itself, if one will.
    pub fn next_due(&self) -> Option<WallTime> {
        self.clock.next_due()
    }

    /// Container `id`'s main process ends by itself at `due` (with its status), or not.
    fn set_exit_due(&mut self, id: &str, due: Option<(WallTime, i64)>) {
        let Some(container) = self.containers.get_mut(id) else { return };
        if let Some((at, _)) = std::mem::replace(&mut container.exit_due, due) {
            self.clock.unschedule(at, id);
        }
        if let Some((at, _)) = due {
            self.clock.schedule(at, id);
        }
    }

    /// Let time pass up to `now`: every main process due to end at or before `now` exits, in time
    /// order (ties by container id), each `die` event stamped with its due time; then the clock
    /// is `now` (never earlier than it was). Every request applies the exits due by the clock
    /// first, so a runtime nobody advances still never answers from a stale state.
    pub fn advance(&mut self, now: WallTime) {
        while let Some((at, id)) = self.clock.first_due_by(now) {
            let code = self.containers.get(&id).and_then(|c| c.exit_due).map(|(_, code)| code);
            match code {
                Some(code) => self.exit_at(&id, code, at),
                None => {
                    self.clock.unschedule(at, &id);
                }
            }
        }
        self.clock.catch_up(now);
    }

    /// The daemon restarts (no live-restore): it stops every running container as `dockerd`
    /// does on shutdown (TERM, then KILL after 10 s). Returns how many stopped. Their `die`
    /// events are recorded, but whoever was streaming events loses the stream (the world drops
    /// them).
    pub fn restart_daemon(&mut self) -> usize {
        self.advance(self.clock.now());
        let running: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.state() == ContainerState::Running)
            .map(|c| c.id().to_string())
            .collect();
        for id in &running {
            let code = self.stop_status(id, DAEMON_SHUTDOWN_GRACE_SECS);
            self.exit_at(id, code, self.clock.now());
        }
        running.len()
    }

    /// Remove a container behind the engine's back (`docker rm -f`).
    pub fn remove_externally(&mut self, id_or_name: &str) -> bool {
        self.advance(self.clock.now());
        self.remove_container(id_or_name, true).is_ok()
    }

    /// Docker's `ContainerRm` up to the moment the container is `removing`: refused (409) while
    /// another removal of it is in progress, or while it runs unless `force` (then it is killed:
    /// `die` 137). Until [`SimRuntime::finish_removal`], inspect and lists show it `removing`, a
    /// start is refused (409), a stop does nothing (304) and a second removal is refused (409).
    /// Returns its id.
    pub fn begin_removal(&mut self, id_or_name: &str, force: bool) -> Result<String, RuntimeError> {
        self.advance(self.clock.now());
        let id = self.containers.resolve(id_or_name)?;
        let state = self.containers.get(&id).map(SimContainer::state).ok_or_else(|| not_found(&id))?;
        match state {
            ContainerState::Removing => {
                return Err(RuntimeError::Conflict(format!(
                    "removal of container {id_or_name} is already in progress"
                )));
            }
            ContainerState::Running if !force => {
                return Err(RuntimeError::Conflict(format!(
                    "You cannot remove a running container {id}. Stop the container before attempting removal or force remove"
                )));
            }
            ContainerState::Running => {
                self.other_events("container kill", 1);
                self.killed_now(&id);
                self.exit_at(&id, KILLED, self.clock.now());
            }
            ContainerState::Created | ContainerState::Exited => {}
        }
        if let Some(container) = self.containers.get_mut(&id) {
            container.mark_removing();
        }
        self.journal.container(&id);
        Ok(id)
    }

    /// The removal of container `id` completes: `destroy`, and its name is free again. Named
    /// volumes it used stay (a remove without `-v`). Whether there was such a removal.
    pub fn finish_removal(&mut self, id: &str) -> bool {
        if self.containers.get(id).is_none_or(|c| c.state() != ContainerState::Removing) {
            return false;
        }
        self.event(id, EventAction::Destroy);
        self.outputs.removed(id, self.clock.now());
        self.set_exit_due(id, None);
        self.unindex_ports(id);
        if let Some(removed) = self.containers.remove(id) {
            for network_id in removed.networks.values().filter_map(|a| a.network_id.as_deref()) {
                self.index_attachment(id, network_id, false);
            }
        }
        self.remove_anonymous_volumes(id);
        true
    }

    pub(super) fn start_container(&mut self, id_or_name: &str) -> RuntimeResult {
        let id = self.containers.resolve(id_or_name)?;
        let Some(container) = self.containers.get(&id) else { return Err(not_found(&id)) };
        match container.state() {
            ContainerState::Running => return Ok(RuntimeReply::Done),
            ContainerState::Removing => {
                return Err(RuntimeError::Conflict("container is marked for removal and cannot be started".into()));
            }
            ContainerState::Created | ContainerState::Exited => {}
        }
        // Docker connects the container's networks one by one, `bridge` first (a network gone
        // since is a 404, aliases on a built-in one a 400), and publishes the ports as it joins
        // the first (that endpoint carries them): a port taken fails the start before a later
        // network is looked up (`drydock runtime diff --seed 908288` saw the 500 for a
        // container on `bridge` and on a network that did not exist).
        let (networks, refused) = self.resolve_attachments(&id);
        if networks.is_empty()
            && let Some(error) = refused
        {
            return Err(self.refuse_start(&id, error));
        }
        let ports = match self.publish_ports(&id) {
            Ok(ports) => ports,
            Err(message) => {
                self.fail_start(&id, &message, None);
                return Err(RuntimeError::Transient(format!("500: {message}")));
            }
        };
        if let Some(error) = refused {
            // Docker leaves the networks it had joined, releasing the ports (20.10.24: `network
            // connect` and `network disconnect` of `bridge`, and the 404).
            self.other_events("network connect", networks.len());
            self.other_events("network disconnect", networks.len());
            return Err(self.refuse_start(&id, error));
        }
        let command = self.containers.get(&id).map(|c| c.command.as_slice()).unwrap_or_default();
        if !command.is_empty()
            && let Err(failure) = shell::check_exec(command, &self.file_system(&id))
        {
            // Docker had connected the container's networks, and disconnects them (20.10.24).
            self.other_events("network connect", networks.len());
            self.other_events("network disconnect", networks.len());
            self.fail_start(&id, &failure.message, Some(failure.exit_code));
            return Err(RuntimeError::Invalid(failure.message));
        }
        self.set_published(&id, ports);
        let Some(container) = self.containers.get_mut(&id) else { return Err(not_found(&id)) };
        container.run(self.clock.now());
        self.set_exit_due(&id, None);
        self.other_events("network connect", networks.len());
        self.other_events("volume mount", self.volume_mounts(&id));
        self.activate_attachments(&id, networks);
        self.event(&id, EventAction::Start);
        let (outcome, printed) = self.process_outcome(&id, Signals::default());
        self.outputs.plan(&id, self.clock.now(), printed);
        match outcome {
            Outcome::Exits { after_ms, code } => {
                // Even a program that ends at once runs a moment after its start has answered:
                // Docker shows it `running` until then.
                let after_ms = after_ms.max(BRIEFEST_RUN_MS);
                self.set_exit_due(&id, Some((WallTime(self.clock.now().0.saturating_add(after_ms)), code)));
            }
            Outcome::Forever => {}
        }
        Ok(RuntimeReply::Done)
    }

    pub(super) fn stop_container(&mut self, id_or_name: &str, timeout_secs: u32) -> RuntimeResult {
        let id = self.containers.resolve(id_or_name)?;
        if self.containers.is_running(&id) {
            let code = self.stop_status(&id, timeout_secs);
            // Docker logs a `kill` per signal sent (TERM, and KILL once the grace period is
            // over), then `die`, and `stop` once it has stopped (20.10.24).
            self.other_events("container kill", if code == KILLED { 2 } else { 1 });
            self.exit_at(&id, code, self.clock.now());
            self.other_events("container stop", 1);
        }
        Ok(RuntimeReply::Done)
    }

    /// Docker's stop as it takes time: TERM now, KILL `timeout_secs` later, and the request
    /// answers when the main process has ended. Returns that moment (now, for a container that
    /// is not running: Docker's 304). Until then the container runs; its exit is due then, and
    /// applies as the clock reaches it ([`SimRuntime::advance`]). A second stop during the first
    /// ends it no later than the first would.
    ///
    /// `execute`'s stop applies at once instead: for callers with no time between a request
    /// and its answer.
    pub fn begin_stop(&mut self, id_or_name: &str, timeout_secs: u32) -> Result<WallTime, RuntimeError> {
        self.advance(self.clock.now());
        let id = self.containers.resolve(id_or_name)?;
        let now = self.clock.now();
        if !self.containers.is_running(&id) {
            return Ok(now);
        }
        let (code, after_ms) = self.stop_outcome(&id, timeout_secs);
        let started = self.containers.get(&id).and_then(|c| c.started_at).unwrap_or(now);
        let ends = WallTime(started.0.saturating_add(after_ms).max(now.0));
        let due = self.containers.get(&id).and_then(|c| c.exit_due);
        let (at, code) = match due {
            Some((at, earlier)) if at <= ends => (at, earlier),
            _ => (ends, code),
        };
        // As `stop_container`: a `kill` per signal sent, then (at the exit) `die`, and `stop`;
        // they count in the replay window from now.
        self.other_events("container kill", if code == KILLED { 2 } else { 1 });
        self.other_events("container stop", 1);
        if at <= now {
            self.exit_at(&id, code, now);
        } else {
            self.journal.container(&id);
            self.set_exit_due(&id, Some((at, code)));
        }
        Ok(at)
    }

    pub(super) fn remove_container(&mut self, id_or_name: &str, force: bool) -> RuntimeResult {
        let id = self.begin_removal(id_or_name, force)?;
        self.finish_removal(&id);
        Ok(RuntimeReply::Done)
    }

    /// The status a running container's main process exits with when stopped now: TERM now,
    /// KILL `grace_secs` later.
    fn stop_status(&mut self, id: &str, grace_secs: u32) -> i64 {
        self.stop_outcome(id, grace_secs).0
    }

    /// How a running container's main process ends when stopped now (TERM now, KILL
    /// `grace_secs` later): its status, and when, in milliseconds after its start. What it
    /// prints until then is restated.
    fn stop_outcome(&mut self, id: &str, grace_secs: u32) -> (i64, u64) {
        let started = self.containers.get(id).and_then(|c| c.started_at).unwrap_or(self.clock.now());
        let term_at = self.clock.now().0.saturating_sub(started.0);
        let kill_at = term_at + u64::from(grace_secs) * 1_000;
        let signals = Signals { term_at: Some(term_at), kill_at: Some(kill_at) };
        let (outcome, printed) = self.process_outcome(id, signals);
        self.outputs.restate(id, started, self.clock.now(), printed);
        match outcome {
            Outcome::Exits { code, after_ms } => (code, after_ms),
            Outcome::Forever => (KILLED, kill_at),
        }
    }

    /// How container `id`'s main process ends under `signals`, and what it prints until then;
    /// the files it writes are pending until it ends ([`SimRuntime::apply_written`]). An
    /// inserted container (no command) runs until killed.
    fn process_outcome(&mut self, id: &str, signals: Signals) -> (Outcome, Vec<shell::Printed>) {
        let Some(container) = self.containers.get(id) else { return (Outcome::Forever, Vec::new()) };
        if container.command.is_empty() {
            let outcome = match signals.kill_at {
                Some(after_ms) => Outcome::Exits { after_ms, code: KILLED },
                None => Outcome::Forever,
            };
            return (outcome, Vec::new());
        }
        let env = shell::environment(&container.env, id.get(..12).unwrap_or(id));
        let ran = shell::run(&container.command, &self.file_system(id), &env, signals);
        if let Some(container) = self.containers.get_mut(id) {
            container.writes_pending = ran.written;
        }
        (ran.outcome, ran.printed)
    }

    /// KILL reaches container `id`'s main process now (a forced removal): of the files it
    /// would write, those written by now are what it leaves.
    fn killed_now(&mut self, id: &str) {
        let now = self.clock.now();
        let started = self.containers.get(id).and_then(|c| c.started_at).unwrap_or(now);
        let kill_at = now.0.saturating_sub(started.0);
        self.process_outcome(id, Signals { term_at: None, kill_at: Some(kill_at) });
    }

    /// A start of container `id` is refused with `error` (its message recorded, as any failed
    /// start's). Returns `error`.
    fn refuse_start(&mut self, id: &str, error: RuntimeError) -> RuntimeError {
        let (RuntimeError::NotFound(message)
        | RuntimeError::Invalid(message)
        | RuntimeError::Conflict(message)
        | RuntimeError::Uncertain(message)
        | RuntimeError::Transient(message)) = &error;
        self.fail_start(id, message, None);
        error
    }

    /// A start failed: the container keeps its state, with Docker's error and an exit code
    /// (`exit_code`, else 128 unless it has a non-zero one already).
    fn fail_start(&mut self, id: &str, message: &str, exit_code: Option<i64>) {
        self.journal.container(id);
        if let Some(container) = self.containers.get_mut(id) {
            let exit_code = match (exit_code, container.info().exit_code) {
                (Some(code), _) => code,
                (None, Some(code)) if code != 0 => code,
                (None, _) => START_FAILED_EXIT_CODE,
            };
            container.fail_start(message, exit_code);
        }
    }

    /// The main process of container `id` ended with `code` at `time`.
    fn exit_at(&mut self, id: &str, code: i64, time: WallTime) {
        if let Some(c) = self.containers.get_mut(id) {
            c.exit(code);
        }
        self.apply_written(id);
        self.set_published(id, Vec::new());
        self.set_exit_due(id, None);
        self.outputs.end(id, time);
        self.event_at(id, EventAction::Die { exit_code: Some(code) }, time);
        // Then Docker leaves its networks and unmounts its volumes (20.10.24).
        let networks =
            self.containers.get(id).map_or(0, |c| c.networks.values().filter(|a| a.network_id.is_some()).count());
        self.other_events("network disconnect", networks);
        self.other_events("volume unmount", self.volume_mounts(id));
    }

    /// How many named volumes container `id` mounts (each is a volume `mount` and `unmount`
    /// event; a bind mount is none).
    fn volume_mounts(&self, id: &str) -> usize {
        self.containers.get(id).map_or(0, |c| c.mounts.iter().filter(|m| !m.source.starts_with('/')).count())
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
