//! The two runtimes a sequence runs on, behind one small trait, and the step logic written once
//! for both: what a step issues, how it waits, what it records and observes.
//!
//! *Guarantees*: both runtimes get the same requests in the same order; a step's observation is
//! computed by the same code from each runtime's answers ([`crate::observe`]).
//! *Caveats*: the simulated runtime answers at once; the only time it is told is its own model
//! of how long a stop holds ([`SimTarget::stop`]).

use crate::observe::{self, Slots};
use crate::ops::{ImageChoice, Op, Program};
use crate::requests::{self, Names};
use drydock_adapters::Runtime;
use drydock_engine::WallTime;
use drydock_engine::logs::Channel;
use drydock_engine::runtime::{ContainerState, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_sim_runtime::{NetworkCreating, SimRuntime, Stream};
use futures_util::StreamExt;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a start waits for a program that ends by itself, and a capture for its lines.
const SETTLE_LIMIT: Duration = Duration::from_secs(20);

/// What the step logic needs of a runtime.
pub trait Target: Send + Sync {
    fn execute(&self, request: RuntimeRequest) -> impl Future<Output = RuntimeResult> + Send;
    /// A stop: its outcome and how long it held (milliseconds).
    fn stop(&self, request: RuntimeRequest) -> impl Future<Output = (RuntimeResult, u64)> + Send;
    /// The lines container `name` printed so far: stdout, stderr.
    fn logs(&self, name: &str) -> impl Future<Output = Result<(Vec<String>, Vec<String>), RuntimeError>> + Send;
    /// Wait until container `name` no longer runs (a program that ends by itself has ended).
    fn settle(&self, name: &str) -> impl Future<Output = ()> + Send;
}

/// What a sequence has made on one runtime: the ids handed out, and each container slot's
/// program (to know whether a start should wait for it to end).
#[derive(Clone, Debug, Default)]
pub struct Book {
    pub slots: Slots,
    programs: BTreeMap<u8, (Program, ImageChoice)>,
}

/// One runtime with what the sequence made on it.
pub struct Side<T> {
    pub target: T,
    pub book: Mutex<Book>,
    pub names: Names,
    /// When the sequence began: its events are asked for since then.
    pub since: WallTime,
}

impl<T: Target> Side<T> {
    pub fn new(target: T, names: Names, since: WallTime) -> Self {
        Side { target, book: Mutex::new(Book::default()), names, since }
    }

    /// Run one step that is not a `Together`, and observe it.
    pub async fn single(&self, op: &Op) -> Value {
        let seen = self.unsettled(op).await;
        if let Op::Start { c } = op {
            self.settle(*c).await;
        }
        seen
    }

    /// A start of a program that ends by itself waits for it to have ended, so that what
    /// follows does not race with it.
    async fn settle(&self, c: u8) {
        if self.ends_by_itself(c) {
            self.target.settle(&self.names.container(c)).await;
        }
    }

    /// Whether container slot `c` holds a program that ends by itself.
    fn ends_by_itself(&self, c: u8) -> bool {
        let program = self.book.lock().programs.get(&c).copied();
        program.is_some_and(|(program, image)| crate::ops::ends_by_itself(program, image))
    }

    /// Run one step that is not a `Together`, and observe it, without settling a start.
    async fn unsettled(&self, op: &Op) -> Value {
        match op {
            Op::Together(a, b) => json!([Box::pin(self.single(a)).await, Box::pin(self.single(b)).await]),
            Op::Logs { c } => observe::logs(self.target.logs(&self.names.container(*c)).await),
            Op::Stop { timeout_secs, .. } => {
                let request = self.request(op);
                let (result, held_ms) = self.target.stop(request).await;
                observe::stop(&result, *timeout_secs, held_ms, &self.book.lock().slots, &self.names)
            }
            _ => {
                let request = self.request(op);
                let result = self.target.execute(request).await;
                self.record(op, &result);
                observe::outcome(&result, &self.book.lock().slots, &self.names)
            }
        }
    }

    fn request(&self, op: &Op) -> RuntimeRequest {
        let book = self.book.lock();
        match requests::request(op, &self.names, self.since, &book.slots.latest) {
            Some(request) => request,
            None => unreachable!("every operation but Logs and Together is one request"),
        }
    }

    fn record(&self, op: &Op, result: &RuntimeResult) {
        let Ok(RuntimeReply::Created { id }) = result else { return };
        let mut book = self.book.lock();
        match op {
            Op::Create { c, program, image, .. } => {
                let name = self.names.container(*c);
                book.slots.created(&name, id, &self.names);
                book.programs.insert(*c, (*program, *image));
            }
            Op::NetworkCreate { n } => {
                let name = self.names.network(crate::ops::NetworkChoice::Own(*n));
                book.slots.created(&name, id, &self.names);
            }
            _ => {}
        }
    }
}

/// A runtime behind the async contract: the user's Docker through drydock's adapter (or, in the
/// conformance suite's replay of a found case, whichever runtime it runs on).
pub struct RuntimeTarget<R>(pub Arc<R>);

impl<R: Runtime> Target for RuntimeTarget<R> {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        self.0.execute(request).await
    }

    async fn stop(&self, request: RuntimeRequest) -> (RuntimeResult, u64) {
        let began = Instant::now();
        let result = self.0.execute(request).await;
        (result, u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    async fn logs(&self, name: &str) -> Result<(Vec<String>, Vec<String>), RuntimeError> {
        let Some(mut stream) = self.0.capture(name, false, None) else {
            return Err(RuntimeError::Invalid("this runtime captures no output".into()));
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read = async {
            while let Some(line) = stream.next().await {
                let line = line?;
                match line.channel {
                    Channel::Stderr => err.push(line.text),
                    _ => out.push(line.text),
                }
            }
            Ok::<(), RuntimeError>(())
        };
        match tokio::time::timeout(SETTLE_LIMIT, read).await {
            Ok(Ok(())) => Ok((out, err)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(RuntimeError::Transient(format!("the capture of {name} did not end"))),
        }
    }

    async fn settle(&self, name: &str) {
        let began = Instant::now();
        while began.elapsed() < SETTLE_LIMIT {
            let request = RuntimeRequest::InspectContainer { id: name.to_string() };
            match self.0.execute(request).await {
                Ok(RuntimeReply::Container(info)) if info.state == ContainerState::Running => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => return,
            }
        }
    }
}

/// The simulated runtime, on its own clock.
#[derive(Clone)]
pub struct SimTarget(pub Arc<Mutex<SimRuntime>>);

impl SimTarget {
    pub fn new(runtime: SimRuntime) -> Self {
        SimTarget(Arc::new(Mutex::new(runtime)))
    }

    /// An independent copy, to try another order of a `Together` on.
    pub fn fork(&self) -> Self {
        SimTarget::new(self.0.lock().clone())
    }
}

impl Target for SimTarget {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        self.0.lock().execute(&request)
    }

    async fn stop(&self, request: RuntimeRequest) -> (RuntimeResult, u64) {
        finish_stop(self, Model::begin_stop(self, &request))
    }

    async fn logs(&self, name: &str) -> Result<(Vec<String>, Vec<String>), RuntimeError> {
        let runtime = self.0.lock();
        let id = runtime.open_logs(name)?;
        let now = runtime.now();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for line in runtime.output(&id).map(|o| o.printed_by(now)).unwrap_or_default() {
            match line.stream {
                Stream::Stdout => out.push(line.text.clone()),
                Stream::Stderr => err.push(line.text.clone()),
            }
        }
        Ok((out, err))
    }

    /// The program ends (a moment after its start, if it ends at once).
    async fn settle(&self, name: &str) {
        let mut runtime = self.0.lock();
        if let Some(due) = runtime.exit_due(name) {
            runtime.advance(due);
        }
    }
}

impl<T: Target> Side<T> {
    /// Run one step: a `Together`'s two operations issued at once.
    pub async fn step(&self, op: &Op) -> Value {
        match op {
            Op::Together(a, b) => {
                let (x, y) = tokio::join!(self.single(a), self.single(b));
                json!([x, y])
            }
            _ => self.single(op).await,
        }
    }
}

/// A model a sequence runs on: a [`Target`] that can be copied, to try each order of a
/// `Together`.
pub trait Model: Target + Sized {
    /// An independent copy.
    fn fork(&self) -> Self;
    /// The first half of a removal (Docker shows the container `removing` until the second):
    /// its id, or the removal's error.
    fn begin_removal(&self, name: &str, force: bool) -> Result<String, RuntimeError>;
    /// The second half: the container is gone.
    fn finish_removal(&self, id: &str);
    /// The first half of a network create (Docker checks the name, draws the id): its id, or
    /// the create's error. Nothing is visible until the second half.
    fn begin_network_create(&self, request: &RuntimeRequest) -> Result<NetworkCreating, RuntimeError>;
    /// The second half: the network exists. Its id.
    fn finish_network_create(&self, creating: NetworkCreating) -> String;
    /// The first half of a stop: the process is signalled. When it will have ended, and the
    /// time now, or the stop's error.
    fn begin_stop(&self, request: &RuntimeRequest) -> Result<(WallTime, WallTime), RuntimeError>;
    /// The second half: the clock reaches `done`, and the stopped process has ended.
    fn finish_stop(&self, done: WallTime);
}

impl Model for SimTarget {
    fn fork(&self) -> Self {
        SimTarget::fork(self)
    }

    fn begin_removal(&self, name: &str, force: bool) -> Result<String, RuntimeError> {
        self.0.lock().begin_removal(name, force)
    }

    fn finish_removal(&self, id: &str) {
        self.0.lock().finish_removal(id);
    }

    fn begin_network_create(&self, request: &RuntimeRequest) -> Result<NetworkCreating, RuntimeError> {
        let RuntimeRequest::CreateNetwork(create) = request else {
            unreachable!("begin_network_create is given network creates only")
        };
        self.0.lock().begin_network_create(create)
    }

    fn finish_network_create(&self, creating: NetworkCreating) -> String {
        self.0.lock().finish_network_create(creating)
    }

    fn begin_stop(&self, request: &RuntimeRequest) -> Result<(WallTime, WallTime), RuntimeError> {
        let RuntimeRequest::StopContainer { id, timeout_secs } = request else {
            unreachable!("begin_stop is given stops only")
        };
        let mut runtime = self.0.lock();
        let now = runtime.now();
        runtime.begin_stop(id, *timeout_secs).map(|done| (now, done))
    }

    fn finish_stop(&self, done: WallTime) {
        self.0.lock().advance(done);
    }
}

/// A stop begun on `model` ends: its result, and how long it held (ms).
fn finish_stop(model: &impl Model, begun: Result<(WallTime, WallTime), RuntimeError>) -> (RuntimeResult, u64) {
    match begun {
        Ok((began, done)) => {
            model.finish_stop(done);
            (Ok(RuntimeReply::Done), done.0.saturating_sub(began.0))
        }
        Err(e) => (Err(e), 0),
    }
}

impl<M: Model> Side<M> {
    /// An independent copy of the model and what the sequence made on it.
    fn fork(&self) -> Self {
        Side {
            target: self.target.fork(),
            book: Mutex::new(self.book.lock().clone()),
            names: self.names.clone(),
            since: self.since,
        }
    }

    /// Every way step `op` on this model observes what Docker did, `observed`: the model
    /// after each (a `Together` in either order, or with the other operation inside a
    /// removal), and what each way that disagreed observed instead. Several ways can agree
    /// with the step and still leave different states (a start and a stop at once: stopped,
    /// or stopped before it started and running): the caller keeps them all until a later
    /// step tells them apart.
    pub async fn outcomes(self, op: &Op, observed: &Value) -> (Vec<Self>, Vec<Value>) {
        let Op::Together(a, b) = op else {
            let seen = self.single(op).await;
            return if observe::agrees(&seen, observed) { (vec![self], Vec::new()) } else { (Vec::new(), vec![seen]) };
        };
        let (mut agreeing, mut tried) = (Vec::new(), Vec::new());
        let mut keep = |fork: Self, seen: Value| {
            if observe::agrees(&seen, observed) {
                agreeing.push(fork);
            } else {
                tried.push(seen);
            }
        };
        for a_first in [true, false] {
            let fork = self.fork();
            let seen = if a_first {
                let x = fork.single(a).await;
                json!([x, fork.single(b).await])
            } else {
                let y = fork.single(b).await;
                json!([fork.single(a).await, y])
            };
            keep(fork, seen);
        }
        // A removal takes a moment on Docker: the other operation may fall inside it.
        for (removal, other, removal_first) in [(a, b, true), (b, a, false)] {
            let Op::Remove { c, force } = **removal else { continue };
            let fork = self.fork();
            let begun = fork.target.begin_removal(&fork.names.container(c), force);
            let other_seen = fork.single(other).await;
            if let Ok(id) = &begun {
                fork.target.finish_removal(id);
            }
            let removal_seen =
                observe::outcome(&begun.map(|_| RuntimeReply::Done), &fork.book.lock().slots, &fork.names);
            let seen =
                if removal_first { json!([removal_seen, other_seen]) } else { json!([other_seen, removal_seen]) };
            keep(fork, seen);
        }
        // A stop holds until the process ends (a grace period, for one that ignores TERM): the
        // other operation may fall inside it (a second stop then holds as long).
        for (stop, other, stop_first) in [(a, b, true), (b, a, false)] {
            let Op::Stop { timeout_secs, .. } = **stop else { continue };
            let fork = self.fork();
            let begun = fork.target.begin_stop(&fork.request(stop));
            let other_seen = fork.single(other).await;
            let (result, held_ms) = finish_stop(&fork.target, begun);
            let stop_seen = observe::stop(&result, timeout_secs, held_ms, &fork.book.lock().slots, &fork.names);
            let seen = if stop_first { json!([stop_seen, other_seen]) } else { json!([other_seen, stop_seen]) };
            keep(fork, seen);
        }
        // A program that ends at once runs a moment after its start answered (Docker shows it
        // `running`): the other operation may fall in that moment.
        for (start, other, start_first) in [(a, b, true), (b, a, false)] {
            let Op::Start { c } = **start else { continue };
            if !self.ends_by_itself(c) {
                continue;
            }
            let fork = self.fork();
            let start_seen = fork.unsettled(start).await;
            let other_seen = fork.single(other).await;
            fork.settle(c).await;
            let seen = if start_first { json!([start_seen, other_seen]) } else { json!([other_seen, start_seen]) };
            keep(fork, seen);
        }
        // So does a network create (its check of the name and the network appearing are some
        // 140 ms apart): two creates of one name can both pass the check.
        for (create, other, create_first) in [(a, b, true), (b, a, false)] {
            let Op::NetworkCreate { .. } = **create else { continue };
            let fork = self.fork();
            let begun = fork.target.begin_network_create(&fork.request(create));
            let other_seen = fork.single(other).await;
            let result =
                begun.map(|creating| RuntimeReply::Created { id: fork.target.finish_network_create(creating) });
            fork.record(create, &result);
            let create_seen = observe::outcome(&result, &fork.book.lock().slots, &fork.names);
            let seen = if create_first { json!([create_seen, other_seen]) } else { json!([other_seen, create_seen]) };
            keep(fork, seen);
        }
        (agreeing, tried)
    }
}
