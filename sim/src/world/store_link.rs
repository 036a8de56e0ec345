//! The link between engine processes and the store: request latency, and the store faults
//! (`store-conflict`: a competing writer's 409, not applied; `uncertain-store-write`: applied, reply
//! lost).

use super::env::{Env, Event};
use super::latency::Latency;
use crate::trace::{Fault, Record};
use drydock_engine::store::{StoreError, StoreRequest, StoreResult};
use drydock_engine::{MonoTime, OpId};
use drydock_faults::FaultKind;

/// The link between processes and the store (`store-conflict`, `uncertain-store-write`: no
/// magnitudes).
#[derive(Clone, Debug)]
pub struct StoreLinkKnobs {
    /// How long a request takes to apply, and its reply to come back.
    pub latency: Latency,
}

impl Default for StoreLinkKnobs {
    fn default() -> Self {
        StoreLinkKnobs { latency: Latency::millis(1, 5) }
    }
}

pub(super) struct StoreLink {
    knobs: StoreLinkKnobs,
}

impl StoreLink {
    pub fn new(knobs: &StoreLinkKnobs) -> Self {
        StoreLink { knobs: knobs.clone() }
    }

    /// `process` sent `request`: it reaches the store after its latency.
    pub fn send(&self, env: &mut Env, now: MonoTime, process: usize, id: OpId, request: StoreRequest) {
        let at = now + env.draw(self.knobs.latency);
        env.owe(at, Event::StoreApply { process, id, request: Box::new(request) });
    }

    /// A competing writer gets there first (an update only), so the request does not apply.
    pub fn conflict(&self, env: &mut Env, request: &StoreRequest) -> Option<StoreError> {
        let update = matches!(request, StoreRequest::Update { .. } | StoreRequest::UpdateStatus { .. });
        if !update || !env.fires(FaultKind::StoreConflict) {
            return None;
        }
        env.record(Record::Fault(Fault::StoreConflict));
        env.stats.other_faults += 1;
        Some(StoreError::Conflict { key: request.describe(), reason: "a competing writer got there first".into() })
    }

    /// Whether the reply to a write that applied is lost.
    pub fn loses_reply(&self, env: &mut Env, request: &StoreRequest, result: &StoreResult) -> bool {
        !request.is_read() && result.is_ok() && env.fires(FaultKind::UncertainStoreWrite)
    }

    /// The reply goes back to `process` (`lost`: as an uncertain error).
    #[allow(clippy::too_many_arguments)]
    pub fn reply(
        &self,
        env: &mut Env,
        now: MonoTime,
        process: usize,
        id: OpId,
        request: &StoreRequest,
        result: StoreResult,
        lost: bool,
    ) {
        let result = if lost {
            env.record(Record::Fault(Fault::StoreReplyLost));
            Err(StoreError::Uncertain {
                key: request.describe(),
                reason: "the connection dropped after the request was sent".into(),
            })
        } else {
            result
        };
        let at = now + env.draw(self.knobs.latency);
        // The request's debt carries over to its reply.
        env.at(at, Event::StoreReply { process, id, result });
    }
}
