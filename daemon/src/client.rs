//! A small client of the daemon's API, written over a transport it is given ([`Connector`]), so
//! that the same code runs on a real socket and on turmoil's simulated network in the tests
//! (`daemon/tests/turmoil/`).
//!
//! It does what a controller needs with Kubernetes semantics: [`Client::create`],
//! [`Client::get`], [`Client::delete`], [`Client::list`] and a resuming [`Watcher`].
//!
//! *Guarantees*
//! - Every request that failed in transport (no connection, a reset, a timeout: the client
//!   cannot know whether the server acted) is retried with exponential backoff, on a new
//!   connection, until [`ClientOptions::give_up_after`]; so are `429`, `502`, `503` and `504`.
//! - A create is idempotent: the client stamps the object with a request id (the
//!   [`REQUEST_ID_ANNOTATION`] annotation, unless the caller set one) and sends the same id on
//!   every retry. The server answers a create whose id an existing object of the same kind and
//!   namespace carries with `200 OK` and that object, so a create whose reply was lost after the
//!   commit neither makes a second object nor reports `AlreadyExists` for its own write.
//! - A delete whose retry finds the object gone (`404` after a transport failure) reports
//!   [`Deleted::Gone`]: the lost attempt, or someone else, deleted it. A `404` on the first
//!   attempt is an error.
//! - A [`Watcher`] starts with a list ([`WatchEvent::Restarted`]), then watches from the list's
//!   resourceVersion; after a broken, silent or ended stream it resumes from the last
//!   resourceVersion it delivered (or a bookmark's), and after `410 Gone` it lists again. It
//!   delivers each change at most once and in resourceVersion order: a version not newer than the
//!   last one delivered is dropped (and counted in [`WatcherStats::stale_dropped`]).
//!
//! *Caveats*: plain HTTP/1.1 only, one connection per request (the daemon serves TLS: this
//! client is for transports that are already trusted, such as the simulated network of the
//! tests, or a TLS stream a [`Connector`] sets up itself). A request id is remembered by the
//! server only as long as its object exists. Updates and patches are not offered: their retries
//! need a resourceVersion precondition the caller must reason about.

use crate::api::REQUEST_ID_ANNOTATION;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;

/// Opens connections to the API server.
pub trait Connector: Send + Sync + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn connect(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

/// Plain TCP to `addr` (tests and examples; the daemon itself serves only TLS).
#[derive(Clone, Debug)]
pub struct TcpConnector(pub SocketAddr);

impl Connector for TcpConnector {
    type Stream = tokio::net::TcpStream;

    async fn connect(&self) -> io::Result<tokio::net::TcpStream> {
        tokio::net::TcpStream::connect(self.0).await
    }
}

/// How the client retries and waits.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// One attempt (connect, send, read the whole answer) that takes longer is abandoned and
    /// retried.
    pub request_timeout: Duration,
    /// The first pause between attempts; doubled after each failure up to `backoff_max`.
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// A request still failing in transport this long after its first attempt is reported as
    /// [`ClientError::Transport`].
    pub give_up_after: Duration,
    /// A watch stream that brings nothing (not even a bookmark) for this long is dropped and
    /// resumed. Keep it above the server's bookmark interval.
    pub watch_idle_timeout: Duration,
    /// Request ids are `<prefix>-<n>`; the prefix must be unique per client (random by default).
    pub request_id_prefix: String,
}

impl Default for ClientOptions {
    fn default() -> Self {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        ClientOptions {
            token: None,
            request_timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(50),
            backoff_max: Duration::from_secs(2),
            give_up_after: Duration::from_secs(60),
            watch_idle_timeout: Duration::from_secs(30),
            request_id_prefix: hex::encode(seed),
        }
    }
}

/// Why a request failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ClientError {
    /// Every attempt failed in transport until the client gave up: the server may or may not
    /// have acted on one of them.
    #[error("no answer from the API after {attempts} attempts: {last}")]
    Transport { attempts: u32, last: String },
    /// The server answered with an error `Status`.
    #[error("{code} {reason}: {message}")]
    Api { code: u16, reason: String, message: String },
    /// The server answered something this client cannot read.
    #[error("cannot read the API's answer: {0}")]
    Decode(String),
}

impl ClientError {
    pub fn reason(&self) -> Option<&str> {
        match self {
            ClientError::Api { reason, .. } => Some(reason),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ClientError::Api { code: 404, .. })
    }

    fn from_status(code: StatusCode, body: &Value) -> ClientError {
        let text = |field: &str| body.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        ClientError::Api { code: code.as_u16(), reason: text("reason"), message: text("message") }
    }
}

/// What a delete found.
#[derive(Clone, Debug, PartialEq)]
pub enum Deleted {
    /// The server's answer: the object deleted, or marked for deletion (finalizers).
    Object(Value),
    /// A retry found it gone: an attempt whose answer was lost deleted it (or someone else did).
    Gone,
}

/// A list: the objects and the store's resourceVersion they are current at.
#[derive(Clone, Debug)]
pub struct List {
    pub resource_version: u64,
    pub items: Vec<Value>,
}

/// The answer of one exchange, or why there was none.
enum Attempt {
    Answered(StatusCode, Bytes),
    /// No (complete) answer: retry.
    Failed(String),
}

/// Aborts the task driving a connection when dropped, so an abandoned attempt leaves nothing
/// behind.
struct ConnTask(JoinHandle<()>);

impl Drop for ConnTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Inner<C> {
    connector: C,
    options: ClientOptions,
    next_id: AtomicU64,
}

/// The API client. Cheap to clone: clones share the connector and the request-id counter.
pub struct Client<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Client<C> {
    fn clone(&self) -> Self {
        Client { inner: self.inner.clone() }
    }
}

impl<C: Connector> Client<C> {
    pub fn new(connector: C, options: ClientOptions) -> Self {
        Client { inner: Arc::new(Inner { connector, options, next_id: AtomicU64::new(1) }) }
    }

    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// A fresh request id (`<prefix>-<n>`).
    pub fn request_id(&self) -> String {
        format!("{}-{}", self.inner.options.request_id_prefix, self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Open a connection and send `request`, answering once the head arrived. The returned
    /// task guard keeps the connection alive while the body is read.
    async fn open(&self, request: Request<Full<Bytes>>) -> Result<(Response<Incoming>, ConnTask), String> {
        let stream = self.inner.connector.connect().await.map_err(|e| format!("connect: {e}"))?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
        let task = ConnTask(tokio::spawn(async move {
            let _ = conn.await;
        }));
        let response = sender.send_request(request).await.map_err(|e| format!("send: {e}"))?;
        Ok((response, task))
    }

    fn request(&self, method: &Method, path: &str, body: Option<&[u8]>) -> Result<Request<Full<Bytes>>, String> {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("host", "drydock")
            .header("accept", "application/json");
        if let Some(token) = &self.inner.options.token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let body = Full::new(Bytes::copy_from_slice(body.unwrap_or_default()));
        builder.body(body).map_err(|e| format!("request: {e}"))
    }

    async fn attempt(&self, method: &Method, path: &str, body: Option<&[u8]>) -> Attempt {
        let exchange = async {
            let request = self.request(method, path, body)?;
            let (response, _task) = self.open(request).await?;
            let code = response.status();
            let bytes = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
            Ok::<_, String>((code, bytes))
        };
        match tokio::time::timeout(self.inner.options.request_timeout, exchange).await {
            Ok(Ok((code, bytes))) => Attempt::Answered(code, bytes),
            Ok(Err(error)) => Attempt::Failed(error),
            Err(_) => Attempt::Failed("timed out".into()),
        }
    }

    /// One request, retried on transport failures and on 429/502/503/504. Answers the status,
    /// the body as JSON, and whether an earlier attempt may have reached the server.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value, bool), ClientError> {
        let body = body.map(|b| serde_json::to_vec(&b).unwrap_or_default());
        let started = tokio::time::Instant::now();
        let mut backoff = Backoff::new(&self.inner.options);
        let mut attempts = 0u32;
        let mut ambiguous = false;
        loop {
            attempts += 1;
            let last = match self.attempt(&method, path, body.as_deref()).await {
                Attempt::Answered(code, _) if retryable(code) => format!("{code}"),
                Attempt::Answered(code, bytes) => {
                    let value = if bytes.is_empty() {
                        Value::Null
                    } else {
                        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()))?
                    };
                    return Ok((code, value, ambiguous));
                }
                Attempt::Failed(error) => {
                    ambiguous = true;
                    error
                }
            };
            tracing::debug!(%method, path, attempts, error = %last, "retrying");
            if started.elapsed() >= self.inner.options.give_up_after {
                return Err(ClientError::Transport { attempts, last });
            }
            backoff.wait().await;
        }
    }

    /// Create `object` in `collection` (a path such as
    /// `/apis/drydock.dev/v1/namespaces/demo/physicalcontainers`); answers the stored object.
    /// Idempotent through the request id (see the module documentation).
    pub async fn create(&self, collection: &str, mut object: Value) -> Result<Value, ClientError> {
        let annotations = object
            .as_object_mut()
            .ok_or_else(|| ClientError::Decode("an object to create must be a JSON object".into()))?
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ClientError::Decode("metadata must be a JSON object".into()))?
            .entry("annotations")
            .or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut()
            && !annotations.contains_key(REQUEST_ID_ANNOTATION)
        {
            annotations.insert(REQUEST_ID_ANNOTATION.into(), Value::String(self.request_id()));
        }
        match self.call(Method::POST, collection, Some(object)).await? {
            (StatusCode::OK | StatusCode::CREATED, stored, _) => Ok(stored),
            (code, body, _) => Err(ClientError::from_status(code, &body)),
        }
    }

    /// The object at `path`.
    pub async fn get(&self, path: &str) -> Result<Value, ClientError> {
        match self.call(Method::GET, path, None).await? {
            (StatusCode::OK, object, _) => Ok(object),
            (code, body, _) => Err(ClientError::from_status(code, &body)),
        }
    }

    /// Delete the object at `path` (see [`Deleted`]).
    pub async fn delete(&self, path: &str) -> Result<Deleted, ClientError> {
        match self.call(Method::DELETE, path, None).await? {
            (StatusCode::OK | StatusCode::ACCEPTED, object, _) => Ok(Deleted::Object(object)),
            (StatusCode::NOT_FOUND, _, true) => Ok(Deleted::Gone),
            (code, body, _) => Err(ClientError::from_status(code, &body)),
        }
    }

    /// Every object of `collection`, and the resourceVersion the list is current at.
    pub async fn list(&self, collection: &str) -> Result<List, ClientError> {
        match self.call(Method::GET, collection, None).await? {
            (StatusCode::OK, mut list, _) => {
                let resource_version = list
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .and_then(|rv| rv.parse().ok())
                    .ok_or_else(|| ClientError::Decode("a list without metadata.resourceVersion".into()))?;
                let items = match list.get_mut("items").map(Value::take) {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                Ok(List { resource_version, items })
            }
            (code, body, _) => Err(ClientError::from_status(code, &body)),
        }
    }

    /// A watcher of `collection` that lists first (see [`Watcher`]).
    pub fn watcher(&self, collection: &str) -> Watcher<C> {
        Watcher {
            client: self.clone(),
            collection: collection.to_string(),
            resource_version: None,
            stream: None,
            pending: VecDeque::new(),
            stats: WatcherStats::default(),
        }
    }
}

fn retryable(code: StatusCode) -> bool {
    matches!(code.as_u16(), 429 | 502 | 503 | 504)
}

/// Exponential backoff without jitter (deterministic: the tests' seeds decide everything).
struct Backoff {
    next: Duration,
    initial: Duration,
    max: Duration,
}

impl Backoff {
    fn new(options: &ClientOptions) -> Self {
        Backoff { next: options.backoff_initial, initial: options.backoff_initial, max: options.backoff_max }
    }

    async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.max);
    }

    fn reset(&mut self) {
        self.next = self.initial;
    }
}

/// What a [`Watcher`] delivers.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// The whole collection as of `resource_version`: at the start, and after `410 Gone` (the
    /// changes in between are not known one by one; the consumer replaces its view).
    Restarted {
        resource_version: u64,
        objects: Vec<Value>,
    },
    Added(Value),
    Modified(Value),
    Deleted(Value),
}

impl WatchEvent {
    /// The resourceVersion this event brings the consumer to.
    pub fn resource_version(&self) -> u64 {
        match self {
            WatchEvent::Restarted { resource_version, .. } => *resource_version,
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                object_resource_version(o).unwrap_or(0)
            }
        }
    }
}

/// How a watcher got on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatcherStats {
    /// Lists made (the first one included).
    pub lists: u64,
    /// Watch streams opened.
    pub streams: u64,
    /// Streams that broke, went silent or ended and were resumed from the last version.
    pub resumes: u64,
    /// `410 Gone` answers (each followed by a list).
    pub gone: u64,
    /// Events not newer than the last one delivered, dropped.
    pub stale_dropped: u64,
}

struct Stream {
    body: Incoming,
    buffer: BytesMut,
    /// When the stream last brought something. Kept here, not in a timer of the read, so a
    /// caller that polls [`Watcher::next`] with its own timeouts does not restart the count.
    last_data: tokio::time::Instant,
    _task: ConnTask,
}

/// A watch that survives its connection: see the module documentation.
pub struct Watcher<C> {
    client: Client<C>,
    collection: String,
    /// The last version delivered (an event's or a bookmark's); `None`: list next.
    resource_version: Option<u64>,
    stream: Option<Stream>,
    pending: VecDeque<WatchEvent>,
    stats: WatcherStats,
}

/// One line of a watch stream, read.
enum Line {
    Event(WatchEvent),
    Bookmark(u64),
    Gone,
}

impl<C: Connector> Watcher<C> {
    pub fn stats(&self) -> WatcherStats {
        self.stats
    }

    /// The last resourceVersion delivered (or bookmarked).
    pub fn resource_version(&self) -> Option<u64> {
        self.resource_version
    }

    /// The next change. Transport trouble is never an error here: the watcher retries (with
    /// backoff) for as long as it is polled. Errors are the server's refusals.
    ///
    /// Cancel-safe: a call dropped before it answered loses no event (an event is taken off the
    /// stream and delivered without an await in between).
    pub async fn next(&mut self) -> Result<WatchEvent, ClientError> {
        let mut backoff = Backoff::new(&self.client.inner.options);
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            let Some(since) = self.resource_version else {
                let list = self.client.list(&self.collection).await?;
                self.stats.lists += 1;
                self.resource_version = Some(list.resource_version);
                return Ok(WatchEvent::Restarted { resource_version: list.resource_version, objects: list.items });
            };
            if self.stream.is_none() {
                match self.open(since).await {
                    Ok(Some(stream)) => {
                        self.stats.streams += 1;
                        self.stream = Some(stream);
                    }
                    Ok(None) => {
                        self.stats.gone += 1;
                        self.resource_version = None;
                        continue;
                    }
                    Err(None) => {
                        backoff.wait().await;
                        continue;
                    }
                    Err(Some(error)) => return Err(error),
                }
            }
            match self.read_line().await {
                Ok(Some(Line::Event(event))) => {
                    let version = event.resource_version();
                    if version <= since {
                        self.stats.stale_dropped += 1;
                        continue;
                    }
                    self.resource_version = Some(version);
                    backoff.reset();
                    return Ok(event);
                }
                Ok(Some(Line::Bookmark(version))) => {
                    self.resource_version = Some(version.max(since));
                    backoff.reset();
                }
                Ok(Some(Line::Gone)) => {
                    self.stream = None;
                    self.stats.gone += 1;
                    self.resource_version = None;
                }
                Ok(None) => {
                    // The stream ended (the server's timeout, or a clean close): resume.
                    self.stream = None;
                    self.stats.resumes += 1;
                }
                Err(error) => {
                    tracing::debug!(collection = %self.collection, %error, "watch stream broken: resuming");
                    self.stream = None;
                    self.stats.resumes += 1;
                    backoff.wait().await;
                }
            }
        }
    }

    /// Open a watch from `since`. `Ok(None)`: 410 Gone. `Err(None)`: transport trouble, retry.
    async fn open(&self, since: u64) -> Result<Option<Stream>, Option<ClientError>> {
        let path = format!("{}?watch=true&allowWatchBookmarks=true&resourceVersion={since}", self.collection);
        let client = &self.client;
        let request = client.request(&Method::GET, &path, None).map_err(|_| None)?;
        let opened = tokio::time::timeout(client.inner.options.request_timeout, client.open(request)).await;
        let (response, task) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => {
                tracing::debug!(collection = %self.collection, %error, "cannot open a watch");
                return Err(None);
            }
            Err(_) => return Err(None),
        };
        let code = response.status();
        if code == StatusCode::OK {
            return Ok(Some(Stream {
                body: response.into_body(),
                buffer: BytesMut::new(),
                last_data: tokio::time::Instant::now(),
                _task: task,
            }));
        }
        if code == StatusCode::GONE {
            return Ok(None);
        }
        if retryable(code) {
            return Err(None);
        }
        let body = tokio::time::timeout(client.inner.options.request_timeout, response.into_body().collect()).await;
        match body {
            Ok(Ok(body)) => {
                let value = serde_json::from_slice(&body.to_bytes()).unwrap_or(Value::Null);
                Err(Some(ClientError::from_status(code, &value)))
            }
            _ => Err(None),
        }
    }

    /// The next line of the open stream. `Ok(None)`: it ended cleanly.
    async fn read_line(&mut self) -> Result<Option<Line>, String> {
        let idle = self.client.inner.options.watch_idle_timeout;
        let Some(stream) = self.stream.as_mut() else { return Ok(None) };
        loop {
            if let Some(end) = stream.buffer.iter().position(|b| *b == b'\n') {
                let line = stream.buffer.split_to(end + 1);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return parse_line(&line).map(Some);
            }
            let frame = match tokio::time::timeout_at(stream.last_data + idle, stream.body.frame()).await {
                Err(_) => return Err(format!("nothing for {idle:?}")),
                Ok(None) if stream.buffer.is_empty() => return Ok(None),
                Ok(None) => return Err("the stream ended in the middle of a line".into()),
                Ok(Some(Err(error))) => return Err(error.to_string()),
                Ok(Some(Ok(frame))) => frame,
            };
            stream.last_data = tokio::time::Instant::now();
            if let Ok(data) = frame.into_data() {
                stream.buffer.extend_from_slice(&data);
            }
        }
    }
}

fn object_resource_version(object: &Value) -> Option<u64> {
    object.pointer("/metadata/resourceVersion")?.as_str()?.parse().ok()
}

fn parse_line(line: &[u8]) -> Result<Line, String> {
    let mut value: Value = serde_json::from_slice(line).map_err(|e| format!("a watch line that is not JSON: {e}"))?;
    let object = value.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    let version =
        || object_resource_version(&object).ok_or_else(|| "a watch event without a resourceVersion".to_string());
    match value.get("type").and_then(Value::as_str) {
        Some("ADDED") => Ok(Line::Event(WatchEvent::Added(object))),
        Some("MODIFIED") => Ok(Line::Event(WatchEvent::Modified(object))),
        Some("DELETED") => Ok(Line::Event(WatchEvent::Deleted(object))),
        Some("BOOKMARK") => Ok(Line::Bookmark(version()?)),
        Some("ERROR") if object.get("code").and_then(Value::as_u64) == Some(410) => Ok(Line::Gone),
        Some(other) => Err(format!("a watch event of type {other:?}: {object}")),
        None => Err("a watch line without a type".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn watch_lines_parse() {
        let line = br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}"#;
        let Line::Event(event) = parse_line(line).unwrap() else { panic!("not an event") };
        assert_eq!(event.resource_version(), 7);
        let bookmark = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#;
        assert!(matches!(parse_line(bookmark).unwrap(), Line::Bookmark(9)));
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#;
        assert!(matches!(parse_line(gone).unwrap(), Line::Gone));
        assert!(parse_line(b"{\"type\":\"ERROR\",\"object\":{\"code\":500}}").is_err());
        assert!(parse_line(b"{\"type\":\"ADD").is_err());
    }
}
