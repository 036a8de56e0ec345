//! [`Components`]: a user's kinds and controllers, put together once and run wherever the engine
//! runs: in production (`drydock up`, `drydock daemon`, a user's own binary built on the `drydock`
//! crate) and under simulation (a scenario's `ScenarioBuilder::components`).
//!
//! *Guarantees*: the built-in kinds and controllers are always there; a user's kinds are
//! registered after them (a user's kind of a built-in name replaces it), and a user's controllers
//! run after the built-in ones, a fresh one from its factory for every engine (every start of
//! `drydock up` or the daemon, every process and every life of a process in a simulation).
//!
//! *Assumptions*: a factory is pure: a controller made twice behaves the same (or a simulated
//! seed would not give the same run twice).

use crate::controller::Controller;
use crate::controllers::{self, ControllerConfig};
use crate::store::{KindInfo, Registry};
use std::sync::Arc;

/// Makes one of a user's controllers, fresh for every engine (a crash loses its memory, so the
/// factory is called again).
pub type ControllerFactory = Arc<dyn Fn() -> Box<dyn Controller> + Send + Sync>;

/// The kinds and controllers of an engine: the built-in ones, plus a user's; see the
/// [module](self) documentation.
///
/// ```
/// use drydock_engine::Components;
/// use drydock_engine::store::KindInfo;
///
/// // A typed kind of one's own would be `KindInfo::typed::<MyKind>(validate)`.
/// let components = Components::new().kind(KindInfo::untyped("Widget", true));
/// assert!(components.registry().get("Widget").is_some());
/// assert!(components.registry().get("Namespace").is_some());
/// assert_eq!(components.kinds().len(), 1);
/// ```
#[derive(Clone)]
pub struct Components {
    /// The built-in kinds and the user's.
    registry: Registry,
    /// The user's kinds only, in the order registered.
    kinds: Vec<KindInfo>,
    /// The user's controllers only.
    controllers: Vec<ControllerFactory>,
}

impl Default for Components {
    fn default() -> Self {
        Components::new()
    }
}

impl Components {
    /// The built-in kinds and controllers, and nothing of a user's yet.
    pub fn new() -> Self {
        Components { registry: Registry::builtin(), kinds: Vec::new(), controllers: Vec::new() }
    }

    /// Register a kind: the store admits it (with its validation), the daemon serves it, the
    /// client verbs validate it, a simulated world stores it.
    pub fn kind(mut self, info: KindInfo) -> Self {
        self.registry.register(info.clone());
        self.kinds.push(info);
        self
    }

    /// Run a controller beside the built-in ones. `make` is called for every engine.
    pub fn controller<C: Controller + 'static>(self, make: impl Fn() -> C + Send + Sync + 'static) -> Self {
        self.controller_factory(Arc::new(move || Box::new(make())))
    }

    /// Run the controller `make` makes beside the built-in ones (a factory already boxed).
    pub fn controller_factory(mut self, make: ControllerFactory) -> Self {
        self.controllers.push(make);
        self
    }

    /// Add `other`'s kinds and controllers after these.
    pub fn with(self, other: Components) -> Self {
        let with_kinds = other.kinds.into_iter().fold(self, Components::kind);
        other.controllers.into_iter().fold(with_kinds, Components::controller_factory)
    }

    /// Every kind: the built-in ones and the user's.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The user's kinds, in the order registered.
    pub fn kinds(&self) -> &[KindInfo] {
        &self.kinds
    }

    /// The factories of the user's controllers, in the order added.
    pub fn controller_factories(&self) -> &[ControllerFactory] {
        &self.controllers
    }

    /// Fresh controllers for one engine: the built-in ones (configured by `config`), then the
    /// user's.
    pub fn controllers(&self, config: &ControllerConfig) -> Vec<Box<dyn Controller>> {
        let mut all = controllers::builtin(config);
        all.extend(self.controllers.iter().map(|make| make()));
        all
    }
}

impl std::fmt::Debug for Components {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self.kinds.iter().map(|k| k.kind.as_str()).collect();
        f.debug_struct("Components").field("kinds", &kinds).field("controllers", &self.controllers.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectKey;
    use crate::controller::{Action, Context, ReconcileResult, Watch};

    struct Named(&'static str);

    impl Controller for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn watches(&self) -> Vec<Watch> {
            Vec::new()
        }
        fn reconcile(&mut self, _: &mut Context<'_>, _: &ObjectKey) -> ReconcileResult {
            Ok(Action::done())
        }
    }

    fn widget() -> KindInfo {
        KindInfo::untyped("Widget", true)
    }

    #[test]
    fn users_controllers_run_after_the_builtin_ones_fresh_each_time() {
        let components = Components::new().controller(|| Named("mine"));
        let builtin = controllers::builtin(&ControllerConfig::default()).len();
        let first = components.controllers(&ControllerConfig::default());
        assert_eq!(first.len(), builtin + 1);
        assert_eq!(first.last().map(|c| c.name()), Some("mine"));
        assert_eq!(components.controllers(&ControllerConfig::default()).len(), builtin + 1);
    }

    #[test]
    fn kinds_join_the_builtin_registry_and_are_listed_once() {
        let components = Components::new().kind(widget());
        assert!(components.registry().get("Widget").is_some());
        assert!(components.registry().get("Namespace").is_some());
        assert_eq!(components.kinds().iter().map(|k| k.kind.as_str()).collect::<Vec<_>>(), ["Widget"]);
    }

    #[test]
    fn with_adds_the_others_kinds_and_controllers_after_these() {
        let a = Components::new().controller(|| Named("a"));
        let b = Components::new().kind(widget()).controller(|| Named("b"));
        let both = a.with(b);
        assert_eq!(both.kinds().len(), 1);
        let names: Vec<String> =
            both.controllers(&ControllerConfig::default()).iter().rev().take(2).map(|c| c.name().to_string()).collect();
        assert_eq!(names, ["b", "a"]);
    }
}
