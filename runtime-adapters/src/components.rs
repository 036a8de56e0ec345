//! [`Components`]: what a production engine runs: the kinds its store admits and serves, and its
//! controllers. The built-in ones, plus a user's.
//!
//! *Guarantees*: the built-in kinds and controllers are always there; a user's controllers run
//! after them, fresh ones for every engine (every start of `drydock up` or the daemon).

use drydock_engine::Controller;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::store::{KindInfo, Registry};
use std::sync::Arc;

/// Makes one of a user's controllers.
pub type ControllerFactory = Arc<dyn Fn() -> Box<dyn Controller> + Send + Sync>;

/// The kinds and controllers of an engine; see the [module](self) documentation.
#[derive(Clone)]
pub struct Components {
    registry: Registry,
    controllers: Vec<ControllerFactory>,
}

impl Default for Components {
    fn default() -> Self {
        Components::builtin()
    }
}

impl Components {
    /// The built-in kinds and controllers only.
    pub fn builtin() -> Self {
        Components { registry: Registry::builtin(), controllers: Vec::new() }
    }

    /// Register a kind: the store admits it (with its validation) and the daemon serves it.
    pub fn kind(mut self, info: KindInfo) -> Self {
        self.registry.register(info);
        self
    }

    /// Run a controller beside the built-in ones.
    pub fn controller<C: Controller + 'static>(mut self, make: impl Fn() -> C + Send + Sync + 'static) -> Self {
        self.controllers.push(Arc::new(move || Box::new(make())));
        self
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Fresh controllers for one engine: the built-in ones, then the user's.
    pub fn controllers(&self) -> Vec<Box<dyn Controller>> {
        let mut all = controllers::builtin(&ControllerConfig::default());
        all.extend(self.controllers.iter().map(|make| make()));
        all
    }
}

impl std::fmt::Debug for Components {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self.registry.kinds().map(|k| k.kind.as_str()).collect();
        f.debug_struct("Components").field("kinds", &kinds).field("extra_controllers", &self.controllers.len()).finish()
    }
}
