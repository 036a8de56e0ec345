//! Namespaces: keep Active ones marked Active; on delete, turn Terminating, delete the children
//! kind by kind in cleanup order, and release the finalizer only when an uncached list confirms
//! that no child is left.
//!
//! *Guarantees*: the namespace finalizer is never removed while the store holds a child of the
//! namespace. The store rejects creates in a terminating namespace, so an empty uncached list
//! taken after deletion began stays empty.

use super::without_finalizer;
use crate::api::{Namespace, NamespacePhase, NamespaceStatus, Object, ObjectKey, Resource, Uid, names};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::store::{DeleteOptions, StoreReply, StoreRequest, StoreResult};
use crate::time::Now;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Default)]
struct Verification {
    list: Option<OpId>,
    children: Option<Vec<Arc<Object>>>,
}

#[derive(Debug)]
pub struct NamespaceController {
    max_deletes: usize,
    verifications: BTreeMap<Uid, Verification>,
}

impl NamespaceController {
    pub fn new(max_deletes: usize) -> Self {
        NamespaceController { max_deletes: max_deletes.max(1), verifications: BTreeMap::new() }
    }

    fn write_status(ctx: &mut Context<'_>, ns: &Object, status: &NamespaceStatus) -> bool {
        if ns.status::<Namespace>().ok().as_ref() == Some(status) {
            return false;
        }
        let mut next = ns.clone();
        next.set_status::<Namespace>(status);
        ctx.store(StoreRequest::UpdateStatus { object: next });
        true
    }

    fn delete_children<'a>(&self, ctx: &mut Context<'_>, children: impl Iterator<Item = &'a Arc<Object>>) {
        for child in children.filter(|c| !c.metadata.is_deleting()).take(self.max_deletes) {
            ctx.store(StoreRequest::Delete {
                key: child.key(),
                options: DeleteOptions { precondition_uid: Some(child.metadata.uid.clone()), ..Default::default() },
            });
        }
    }

    fn terminate(&mut self, ctx: &mut Context<'_>, ns: &Object) -> ReconcileResult {
        let name = ns.metadata.name.as_str();
        // Children of the first kind (in cleanup order) that still has any.
        let cache = ctx.cache();
        let remaining: Vec<&Arc<Object>> = ctx
            .registry()
            .namespaced_in_cleanup_order()
            .into_iter()
            .map(|kind| cache.list(&kind.kind, Some(name)).collect::<Vec<_>>())
            .find(|children| !children.is_empty())
            .unwrap_or_default();
        let total: usize = cache.list("*", Some(name)).count();
        let status = NamespaceStatus {
            phase: Some(NamespacePhase::Terminating),
            message: (total > 0).then(|| format!("waiting for {total} objects to be deleted")),
        };
        if Self::write_status(ctx, ns, &status) {
            return Ok(Action::done());
        }
        let verification = self.verifications.entry(ns.metadata.uid.clone()).or_default();
        if !remaining.is_empty() {
            verification.children = None;
            self.delete_children(ctx, remaining.into_iter());
            return Ok(Action::done());
        }
        if verification.list.is_some() {
            return Ok(Action::done());
        }
        match verification.children.take() {
            None => {
                let id = ctx.store(StoreRequest::List { kind: None, namespace: Some(name.to_string()) });
                verification.list = Some(id);
                Ok(Action::done())
            }
            Some(children) if children.is_empty() => {
                tracing::debug!(namespace = name, "cleanup complete: releasing finalizer");
                ctx.store(StoreRequest::Update { object: without_finalizer(ns, names::FINALIZER_NAMESPACE) });
                Ok(Action::done())
            }
            Some(children) => {
                // The cache has not seen these yet; delete them from the list and look again soon.
                self.delete_children(ctx, children.iter());
                Ok(Action::requeue(Duration::from_secs(1)))
            }
        }
    }
}

impl Controller for NamespaceController {
    fn name(&self) -> &str {
        "namespace"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(Namespace::KIND),
            Watch::custom("*", |object, _| match &object.metadata.namespace {
                Some(ns) => vec![ObjectKey::cluster(Namespace::KIND, ns)],
                None => Vec::new(),
            }),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(ns) = ctx.get(key) else {
            self.verifications.retain(|_, v| v.list.is_some());
            return Ok(Action::done());
        };
        if ns.status::<Namespace>().is_err() {
            return Err(ReconcileError(format!("{key}: status does not decode")));
        }
        if !ns.metadata.is_deleting() {
            let active = NamespaceStatus { phase: Some(NamespacePhase::Active), message: None };
            Self::write_status(ctx, ns, &active);
            return Ok(Action::done());
        }
        if !ns.metadata.has_finalizer(names::FINALIZER_NAMESPACE) {
            return Ok(Action::done());
        }
        self.terminate(ctx, ns)
    }

    fn on_store_result(&mut self, _now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        for verification in self.verifications.values_mut() {
            if verification.list == Some(op) {
                verification.list = None;
                verification.children = match result {
                    Ok(StoreReply::Objects(children)) => Some(children.clone()),
                    _ => None,
                };
            }
        }
    }
}
