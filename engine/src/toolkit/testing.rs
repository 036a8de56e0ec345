//! A [`Context`] for the toolkit's unit tests: run a step and see what it issued.
#![allow(clippy::unwrap_used)]

use crate::api::{Object, ObjectMeta, Uid};
use crate::cache::Cache;
use crate::controller::{Context, Issued};
use crate::store::{Registry, StoreRequest};
use crate::time::{MonoTime, Now, WallTime};

#[derive(Default)]
pub(crate) struct Harness {
    cache: Cache,
    registry: Registry,
    next_op: u64,
    seen_created: crate::fixed::FixedSet<Uid>,
}

impl Harness {
    /// Run `step` with a context at `ms` milliseconds; returns its answer and what it issued.
    pub(crate) fn run<R>(&mut self, ms: u64, step: impl FnOnce(&mut Context<'_>) -> R) -> (R, Vec<Issued>) {
        let mut ctx = Context {
            now: Now::new(MonoTime(ms * 1_000_000), WallTime(ms)),
            identity: "engine",
            cache: &self.cache,
            registry: &self.registry,
            next_op: &mut self.next_op,
            issued: Vec::new(),
            earlier_lives_settle_at: MonoTime::ZERO,
            seen_created: &self.seen_created,
            failure_handled: Vec::new(),
            detached_changes: 0,
            detached_left_at: None,
        };
        let answer = step(&mut ctx);
        (answer, ctx.issued)
    }
}

/// A cluster-scoped `Widget` named `name` with uid `uid-<name>`.
pub(crate) fn widget(name: &str) -> Object {
    let mut meta = ObjectMeta::named(None, name);
    meta.uid = Uid(format!("uid-{name}"));
    meta.resource_version = 1;
    Object::new("Widget", meta, serde_json::json!({}))
}

/// The objects of the store updates (spec and metadata) in `issued`.
pub(crate) fn updates(issued: &[Issued]) -> Vec<&Object> {
    issued
        .iter()
        .filter_map(|i| match i {
            Issued::Store(_, StoreRequest::Update { object }) => Some(object),
            _ => None,
        })
        .collect()
}
