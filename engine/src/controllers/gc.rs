//! The garbage collector: deletes dependents whose owners are all gone (background propagation).
//!
//! *Guarantees*: a dependent is deleted only after an uncached read confirmed that none of its
//! owners exists any more with the referenced uid, so a stale cache (owner created but not seen
//! yet) never costs a live object. The delete carries the dependent's uid as precondition.

use crate::api::{ObjectKey, Uid};
use crate::controller::{Action, Context, Controller, OpId, ReconcileResult, Watch};
use crate::store::{DeleteOptions, Propagation, StoreReply, StoreRequest, StoreResult};
use crate::time::Now;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
struct Check {
    /// Which owners the reads are about: op -> owner uid.
    outstanding: BTreeMap<OpId, Uid>,
    absent: BTreeSet<Uid>,
    present: bool,
}

#[derive(Debug, Default)]
pub struct GarbageCollector {
    checks: BTreeMap<ObjectKey, Check>,
}

impl Controller for GarbageCollector {
    fn name(&self) -> &str {
        "garbage-collector"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![Watch::custom("*", |object, cache| {
            let mut keys = vec![object.key()];
            keys.extend(cache.dependents_of(&object.metadata.uid).cloned());
            keys
        })]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(object) = ctx.get(key) else {
            self.checks.remove(key);
            return Ok(Action::done());
        };
        let refs = &object.metadata.owner_references;
        if object.metadata.is_deleting()
            || refs.is_empty()
            || refs.iter().any(|r| ctx.cache().get_by_uid(&r.uid).is_some())
        {
            self.checks.remove(key);
            return Ok(Action::done());
        }
        match self.checks.get(key) {
            None => {
                let mut check = Check::default();
                for owner in refs {
                    let namespaced = ctx.registry().get(&owner.kind).is_some_and(|k| k.namespaced);
                    let ns = if namespaced { object.metadata.namespace.as_deref() } else { None };
                    let id = ctx.store(StoreRequest::Get { key: ObjectKey::new(&owner.kind, ns, &owner.name) });
                    check.outstanding.insert(id, owner.uid.clone());
                }
                self.checks.insert(key.clone(), check);
            }
            Some(check) if !check.outstanding.is_empty() => {}
            Some(check) => {
                let all_gone = !check.present && refs.iter().all(|r| check.absent.contains(&r.uid));
                self.checks.remove(key);
                if all_gone {
                    tracing::debug!(%key, "all owners gone: deleting dependent");
                    ctx.store(StoreRequest::Delete {
                        key: key.clone(),
                        options: DeleteOptions {
                            precondition_uid: Some(object.metadata.uid.clone()),
                            propagation: Propagation::Background,
                            ..Default::default()
                        },
                    });
                }
            }
        }
        Ok(Action::done())
    }

    fn on_store_result(&mut self, _now: Now, key: &ObjectKey, op: OpId, result: &StoreResult) {
        let Some(check) = self.checks.get_mut(key) else { return };
        let Some(owner_uid) = check.outstanding.remove(&op) else { return };
        match result {
            Ok(StoreReply::Object(owner)) if owner.metadata.uid == owner_uid => check.present = true,
            Ok(_) => {
                check.absent.insert(owner_uid);
            }
            Err(e) if e.is_not_found() => {
                check.absent.insert(owner_uid);
            }
            // Unsure: keep the dependent.
            Err(_) => check.present = true,
        }
    }
}
