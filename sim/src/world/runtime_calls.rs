//! Runtime requests meeting the simulated runtime, and the runtime's faults: transient errors,
//! hung and lost replies, NotFound right after a create, a daemon restarting.

use super::{Event, Latency, World};
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeRequest, short};
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, unit};
use std::fmt::Write as _;

impl World<'_> {
    pub(super) fn runtime_apply(&mut self, now: MonoTime, process: usize, id: OpId, request: RuntimeRequest) {
        if self.cancelled.remove(&(process, id)) {
            self.in_flight -= 1;
            let _ = write!(self.line, "p{process} runtime {id} cancelled before it applied: {}", request.describe());
            return;
        }
        let _ = write!(self.line, "p{process} runtime {id} {}", request.describe());
        self.runtime.set_now(self.now(now).wall);
        self.removing = match &request {
            RuntimeRequest::RemoveContainer { id, .. } => self.runtime.container(id).cloned(),
            _ => None,
        };
        let daemon_down = self.runtime_down_until.is_some_and(|until| now < until);
        let hung = !matches!(request, RuntimeRequest::PullImage { .. })
            && self.faults.fires(FaultKind::HungRuntime, &mut self.rng);
        let mut result = if daemon_down {
            self.line.push_str(" [daemon restarting: not applied]");
            Err(RuntimeError::Transient(
                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
                    .into(),
            ))
        } else if hung && unit(&mut self.rng) < 0.5 {
            self.line.push_str(" [fault hung-runtime: never applied, never answered]");
            self.hung.insert((process, id));
            self.in_flight -= 1;
            return;
        } else if self.faults.fires(FaultKind::TransientRuntimeError, &mut self.rng) {
            self.line.push_str(" [fault transient-runtime-error: not applied]");
            self.stats.other_faults += 1;
            Err(RuntimeError::Transient("500: Internal Server Error: the daemon is busy".into()))
        } else if let Some(hidden) = self.hidden_from_inspection(now, &request) {
            self.line.push_str(" [fault notfound-after-create]");
            self.stats.other_faults += 1;
            Err(RuntimeError::NotFound(format!("No such container: {hidden}")))
        } else {
            self.runtime.execute(&request)
        };
        self.record_runtime_apply(process, id, &request, &result);
        self.probe_runtime(process, &request, &result);
        match &result {
            Ok(reply) => {
                let _ = write!(self.line, " -> {}", describe_reply(reply));
            }
            Err(e) => {
                let _ = write!(self.line, " -> {}", e.code());
            }
        }
        if let RuntimeRequest::CreateContainer(_) = request
            && result.is_ok()
        {
            self.stats.runtime_creates += 1;
            if let Ok(RuntimeReply::Created { id }) = &result
                && self.faults.fires(FaultKind::NotFoundAfterCreate, &mut self.rng)
            {
                let until = now + Latency::millis(200, 2_000).draw(&mut self.rng);
                self.hidden.insert(id.clone(), until);
            }
            if self.faults.fires(FaultKind::UncertainCreate, &mut self.rng) {
                self.stats.uncertain_creates += 1;
                self.line.push_str(" [fault uncertain-create: reply lost]");
                if let RuntimeRequest::CreateContainer(c) = &request
                    && let Some(uid) = c.labels.get(drydock_engine::api::names::LABEL_OWNER_UID)
                {
                    self.uncertain_uids.insert(uid.clone());
                }
                result = Err(RuntimeError::Uncertain("connection reset by peer after the request was sent".into()));
            }
        }
        if let RuntimeRequest::RemoveContainer { .. } = request
            && result.is_ok()
            && self.faults.fires(FaultKind::UncertainRemove, &mut self.rng)
        {
            self.line.push_str(" [fault uncertain-remove: reply lost]");
            self.stats.other_faults += 1;
            result = Err(RuntimeError::Uncertain("context deadline exceeded after the request was sent".into()));
        }
        self.broadcast_runtime_events(now);
        if hung {
            self.line.push_str(" [fault hung-runtime: applied, never answered]");
            self.hung.insert((process, id));
            self.in_flight -= 1;
            return;
        }
        let t = now + self.config.runtime_latency.draw(&mut self.rng) / 4;
        self.scheduler.at(t, Event::RuntimeReply { process, id, result });
    }

    /// A just-created container the notfound-after-create fault still hides from inspection.
    fn hidden_from_inspection(&mut self, now: MonoTime, request: &RuntimeRequest) -> Option<String> {
        let RuntimeRequest::InspectContainer { id } = request else { return None };
        let container = self.runtime.container(id)?.id.clone();
        self.hidden.retain(|_, until| *until > now);
        let hidden = self.hidden.contains_key(&container);
        if hidden {
            self.was_hidden.insert(container);
        }
        hidden.then(|| id.clone())
    }
}

fn describe_reply(reply: &drydock_engine::runtime::RuntimeReply) -> String {
    use drydock_engine::runtime::RuntimeReply as R;
    match reply {
        R::Created { id } => format!("created {}", short(id)),
        R::Done => "ok".into(),
        R::Container(c) => format!("{} {}", short(&c.id), c.state),
        R::Containers(list) => format!("{} containers", list.len()),
        R::Image(i) => format!("image {}", short(&i.id)),
        R::Events(events) => format!("{} events", events.len()),
        R::Pulled { progress } => format!("pulled ({} progress lines)", progress.len()),
    }
}
