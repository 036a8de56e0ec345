//! Connections are bounded (issue 47): the real TLS server, as `drydock daemon` serves it, with
//! shortened timeouts and a small cap, driven over loopback by raw TCP, raw TLS and hyper clients.
//!
//! Descriptors: the first test holds 300 connections from both ends (about 600 descriptors in
//! this process, the tests beside it about 150 more), so it needs `ulimit -n` of at least 1024,
//! which it checks first.
#![allow(clippy::unwrap_used)]

use drydock_adapters::SharedStore;
use drydock_daemon::api::{self, ApiOptions};
use drydock_daemon::server::{self, ServerOptions};
use drydock_daemon::state_dir::StateDir;
use drydock_daemon::tls;
use futures_util::future::join_all;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};
use tokio_rustls::client::TlsStream;

/// Long enough that nothing closes for its sake in a test about something else.
const LONG: Duration = Duration::from_secs(30);

/// Slack on top of a timeout for a close to be seen (a loaded CI machine).
const SLACK: Duration = Duration::from_secs(3);

struct Served {
    addr: SocketAddr,
    ca_pem: Vec<u8>,
    token: String,
    stop: oneshot::Sender<()>,
    done: JoinHandle<()>,
    _state: StateDir,
    _tmp: tempfile::TempDir,
}

impl Served {
    /// Stop the server; it returns within its grace period.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        timeout(Duration::from_secs(5), self.done).await.unwrap().unwrap();
    }
}

/// The API on an in-memory store, with the state dir's token, served over TLS with `options`.
async fn serve(options: ServerOptions) -> Served {
    let tmp = tempfile::tempdir().unwrap();
    let state = StateDir::open(&tmp.path().join("state")).unwrap();
    let token = state.token().unwrap();
    let certs = state.certificates(&[]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api_options = ApiOptions { token: Some(token.clone()), ..ApiOptions::default() };
    let router = api::router(SharedStore::in_memory(), api_options);
    let config = tls::server_config(&certs.server_cert_pem, &certs.server_key_pem).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    let grace = Duration::from_secs(2);
    let done = tokio::spawn(server::serve_tls(listener, config, router, shutdown, grace, options));
    let ca_pem = certs.ca_pem.into_bytes();
    Served { addr, ca_pem, token, stop, done, _state: state, _tmp: tmp }
}

fn options(header_read_timeout: Duration, idle_timeout: Duration, max_connections: usize) -> ServerOptions {
    ServerOptions {
        handshake_timeout: Duration::from_secs(1),
        header_read_timeout,
        idle_timeout,
        max_connections,
        ..ServerOptions::default()
    }
}

fn client_config(ca_pem: &[u8], alpn: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

/// A TLS connection (handshake done), nothing sent.
async fn tls_connect(served: &Served, alpn: &[u8]) -> std::io::Result<TlsStream<TcpStream>> {
    let connector = tokio_rustls::TlsConnector::from(client_config(&served.ca_pem, alpn));
    let tcp = TcpStream::connect(served.addr).await?;
    connector.connect(ServerName::try_from("127.0.0.1").unwrap(), tcp).await
}

/// Read until the server closes (end of stream or an error such as a reset); what was read, and
/// how long it took; `None` if it is still open after `within`.
async fn closed_by_server(mut stream: impl AsyncRead + Unpin, within: Duration) -> Option<(Vec<u8>, Duration)> {
    let started = Instant::now();
    let mut read = Vec::new();
    let until_closed = async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read.extend_from_slice(&buf[..n]),
            }
        }
    };
    timeout(within, until_closed).await.ok()?;
    Some((read, started.elapsed()))
}

/// An HTTP/2 client on one TLS connection, and the task driving it (it ends when the
/// connection does).
async fn h2_client(served: &Served) -> (hyper::client::conn::http2::SendRequest<Full<Bytes>>, JoinHandle<()>) {
    let io = TokioIo::new(tls_connect(served, b"h2").await.unwrap());
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.unwrap();
    let driving = tokio::spawn(async move {
        let _ = conn.await;
    });
    (sender, driving)
}

fn request(method: &str, path: &str, token: Option<&str>, body: &str) -> Request<Full<Bytes>> {
    let mut request = Request::builder().method(method).uri(format!("https://127.0.0.1{path}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if !body.is_empty() {
        request = request.header("content-type", "application/json");
    }
    request.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

/// Send `request` on an HTTP/2 connection; its status and body.
async fn h2_call(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> (StatusCode, String) {
    let response = timeout(LONG, sender.send_request(request)).await.unwrap().unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `GET path` with the token on a new HTTP/2 connection.
async fn authenticated_get(served: &Served, path: &str) -> (StatusCode, String) {
    let (mut sender, _driving) = h2_client(served).await;
    h2_call(&mut sender, request("GET", path, Some(&served.token), "")).await
}

/// The soft `ulimit -n` of this process (Linux), if known.
fn descriptor_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find_map(|line| line.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_without_a_token_lock_no_one_out_and_are_closed_at_the_header_timeout() {
    const IDLE: usize = 300;
    if let Some(limit) = descriptor_limit() {
        assert!(limit >= 1024, "this test holds ~{} descriptors: raise `ulimit -n` (now {limit}) to 1024", 2 * IDLE);
    }
    let header_timeout = Duration::from_secs(2);
    let served = serve(options(header_timeout, LONG, 1024)).await;
    // 300 connections that finish the TLS handshake and send nothing (ALPN h2 and http/1.1).
    let idle = join_all((0..IDLE).map(|i| {
        let alpn: &[u8] = if i % 2 == 0 { b"h2" } else { b"http/1.1" };
        async { (tls_connect(&served, alpn).await.unwrap(), Instant::now()) }
    }))
    .await;
    // A client with the token still gets in and is served, while they are open.
    assert_eq!(authenticated_get(&served, "/api/v1/namespaces").await.0, StatusCode::OK);
    // Each is closed by the server at the header-read timeout, counted from its handshake.
    let closes = join_all(idle.into_iter().map(|(stream, connected)| async move {
        let (read, _) = closed_by_server(stream, header_timeout + SLACK).await.expect("closed by the server");
        assert!(read.is_empty(), "nothing was asked, nothing is answered");
        connected.elapsed()
    }))
    .await;
    let earliest = closes.iter().min().unwrap();
    let latest = closes.iter().max().unwrap();
    assert!(*earliest >= header_timeout - Duration::from_millis(100), "closed before the timeout: {earliest:?}");
    assert!(*latest <= header_timeout + SLACK, "closed late: {latest:?}");
    // And the server still serves.
    assert_eq!(authenticated_get(&served, "/livez").await, (StatusCode::OK, "ok".to_string()));
    served.stop().await;
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_tls_handshake_is_closed_at_the_handshake_timeout() {
    let served = serve(options(LONG, LONG, 1024)).await;
    let stalled = join_all((0..20).map(|_| TcpStream::connect(served.addr))).await;
    let closes = join_all(stalled.into_iter().map(|tcp| async {
        closed_by_server(tcp.unwrap(), Duration::from_secs(1) + SLACK).await.expect("closed by the server").1
    }))
    .await;
    assert!(closes.iter().all(|took| *took >= Duration::from_millis(900)), "{closes:?}");
    served.stop().await;
}

#[tokio::test]
async fn a_401_closes_the_connection_over_http1_and_h2() {
    let served = serve(options(LONG, LONG, 1024)).await;
    // HTTP/1.1, keep-alive asked for: the 401 says `Connection: close` and the server closes.
    let mut stream = tls_connect(&served, b"http/1.1").await.unwrap();
    stream.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let (read, _) = closed_by_server(stream, SLACK).await.expect("closed by the server after the 401");
    let response = String::from_utf8_lossy(&read).to_lowercase();
    assert!(response.starts_with("http/1.1 401"), "{response}");
    assert!(response.contains("connection: close"), "{response}");
    assert!(response.contains("\"reason\":\"unauthorized\""), "the Status is sent in full: {response}");
    // HTTP/2, a wrong token: the 401 arrives, then GOAWAY, and the connection ends.
    let (mut sender, driving) = h2_client(&served).await;
    let (status, _) = h2_call(&mut sender, request("GET", "/api/v1/namespaces", Some("wrong"), "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    timeout(SLACK, driving).await.expect("the server closes the HTTP/2 connection").unwrap();
    // A connection that asks for a probe (no token needed) or has the token stays open.
    let (mut sender, driving) = h2_client(&served).await;
    assert_eq!(h2_call(&mut sender, request("GET", "/readyz", None, "")).await.0, StatusCode::OK);
    let token = Some(served.token.as_str());
    assert_eq!(h2_call(&mut sender, request("GET", "/version", token, "")).await.0, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!driving.is_finished(), "only a 401 closes a connection");
    assert_eq!(h2_call(&mut sender, request("GET", "/version", token, "")).await.0, StatusCode::OK);
    served.stop().await;
}

#[tokio::test]
async fn beyond_the_connection_cap_new_connections_are_closed_and_existing_clients_keep_working() {
    const CAP: usize = 50;
    let served = serve(options(LONG, LONG, CAP)).await;
    // An authenticated client, then idle connections up to the cap.
    let (mut client, _driving) = h2_client(&served).await;
    let token = Some(served.token.as_str());
    assert_eq!(h2_call(&mut client, request("GET", "/api/v1/namespaces", token, "")).await.0, StatusCode::OK);
    let mut idle = Vec::new();
    for _ in 1..CAP {
        idle.push(tls_connect(&served, b"h2").await.unwrap());
    }
    // Beyond the cap: accepted, then closed at once (the handshake never completes).
    for _ in 0..5 {
        let tcp = TcpStream::connect(served.addr).await.unwrap();
        closed_by_server(tcp, SLACK).await.expect("a connection beyond the cap is closed at once");
        assert!(tls_connect(&served, b"h2").await.is_err(), "no handshake beyond the cap");
    }
    // The client already connected is served as before, writes included.
    for i in 0..10 {
        let namespace = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"cap-{i}"}}}}"#);
        let (status, body) = h2_call(&mut client, request("POST", "/api/v1/namespaces", token, &namespace)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // Once some close, new connections are served again.
    idle.truncate(CAP - 10);
    let deadline = Instant::now() + SLACK;
    let status = loop {
        match timeout(SLACK, try_authenticated_get(&served)).await {
            Ok(Some(status)) => break status,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            _ => panic!("no connection served after some closed"),
        }
    };
    assert_eq!(status, StatusCode::OK);
    served.stop().await;
}

/// `GET /version` with the token on a new HTTP/2 connection; `None` if the connection is refused.
async fn try_authenticated_get(served: &Served) -> Option<StatusCode> {
    let io = TokioIo::new(tls_connect(served, b"h2").await.ok()?);
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.ok()?;
    tokio::spawn(conn);
    let response = sender.send_request(request("GET", "/version", Some(&served.token), "")).await.ok()?;
    Some(response.status())
}

#[tokio::test]
async fn an_idle_connection_is_closed_at_the_idle_timeout_but_not_while_a_watch_is_in_flight() {
    let idle_timeout = Duration::from_secs(1);
    let served = serve(options(LONG, idle_timeout, 1024)).await;
    let token = Some(served.token.as_str());
    // HTTP/2: a request, then nothing: closed at the idle timeout, not before.
    let (mut sender, driving) = h2_client(&served).await;
    assert_eq!(h2_call(&mut sender, request("GET", "/version", token, "")).await.0, StatusCode::OK);
    let last_request = Instant::now();
    timeout(idle_timeout + SLACK, driving).await.expect("an idle HTTP/2 connection is closed").unwrap();
    assert!(last_request.elapsed() >= idle_timeout - Duration::from_millis(100));
    // HTTP/1.1 keep-alive likewise.
    let mut stream = tls_connect(&served, b"http/1.1").await.unwrap();
    let get = format!("GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n", served.token);
    stream.write_all(get.as_bytes()).await.unwrap();
    let (read, took) =
        closed_by_server(stream, idle_timeout + SLACK).await.expect("an idle HTTP/1 connection is closed");
    assert!(String::from_utf8_lossy(&read).starts_with("HTTP/1.1 200"));
    assert!(took >= idle_timeout - Duration::from_millis(100), "closed after the idle timeout, not at once: {took:?}");
    // A watch in flight is not idle: the connection outlives the idle timeout and the watch
    // still sees a change made after it.
    let (mut sender, driving) = h2_client(&served).await;
    let watch = request("GET", "/api/v1/namespaces?watch=1&timeoutSeconds=60", token, "");
    let mut events = timeout(LONG, sender.send_request(watch)).await.unwrap().unwrap().into_body();
    tokio::time::sleep(idle_timeout * 2).await;
    assert!(!driving.is_finished(), "a connection with a watch in flight is not idle");
    let late = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"late"}}"#;
    let (status, body) = h2_call(&mut sender, request("POST", "/api/v1/namespaces", token, late)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    timeout(SLACK, watch_until(&mut events, "\"late\"")).await.expect("the watch sees the change");
    // Once the watch ends, the connection is idle again and closed.
    drop(events);
    timeout(idle_timeout + SLACK, driving).await.expect("closed once the watch ended").unwrap();
    served.stop().await;
}

/// Read a watch's stream until a frame contains `needle`.
async fn watch_until(events: &mut Incoming, needle: &str) {
    while let Some(frame) = events.frame().await {
        if let Ok(data) = frame.unwrap().into_data()
            && String::from_utf8_lossy(&data).contains(needle)
        {
            return;
        }
    }
    panic!("the watch ended without {needle}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_promptly_while_the_api_is_loaded() {
    let served = Arc::new(serve(options(LONG, LONG, 1024)).await);
    let probing = Arc::new(AtomicBool::new(true));
    // Load, for as long as the probes run: 8 clients writing and listing as fast as answered.
    let load: Vec<_> = (0..8).map(|client| tokio::spawn(load(served.clone(), probing.clone(), client))).collect();
    // Meanwhile probes, each on a new connection and without a token, as a supervisor's.
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let path = if i % 2 == 0 { "/livez" } else { "/readyz" };
        let started = Instant::now();
        let (mut sender, _driving) = h2_client(&served).await;
        assert_eq!(h2_call(&mut sender, request("GET", path, None, "")).await, (StatusCode::OK, "ok".to_string()));
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    probing.store(false, Ordering::Relaxed);
    let mut requests = 0;
    for client in load {
        requests += client.await.unwrap();
    }
    assert!(slowest < Duration::from_secs(2), "a probe took {slowest:?} under load");
    assert!(requests >= 8 * 2, "the probes ran under load: {requests} requests");
    Arc::into_inner(served).unwrap().stop().await;
}

/// Create a namespace and list a page of them, over and over while `probing`; how many requests.
async fn load(served: Arc<Served>, probing: Arc<AtomicBool>, client: usize) -> usize {
    let (mut sender, _driving) = h2_client(&served).await;
    let token = Some(served.token.as_str());
    let mut i = 0;
    while probing.load(Ordering::Relaxed) {
        let name = format!("load-{client}-{i}");
        let namespace = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#);
        let created = h2_call(&mut sender, request("POST", "/api/v1/namespaces", token, &namespace)).await;
        assert_eq!(created.0, StatusCode::CREATED);
        let listed = h2_call(&mut sender, request("GET", "/api/v1/namespaces?limit=20", token, "")).await;
        assert_eq!(listed.0, StatusCode::OK);
        i += 1;
    }
    2 * i
}
