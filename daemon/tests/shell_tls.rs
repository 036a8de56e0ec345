//! The daemon's shell over real TLS: a state dir's certificates and token, the kubeconfig written
//! from them, and a client that trusts only the CA found in that kubeconfig.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use drydock_adapters::SharedStore;
use drydock_daemon::api::{self, ApiOptions};
use drydock_daemon::state_dir::StateDir;
use drydock_daemon::{kubeconfig, server, tls};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// What a client learns from the kubeconfig: server URL, CA PEM, token.
fn read_kubeconfig(path: &Path) -> (String, Vec<u8>, String) {
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cluster = &yaml["clusters"][0]["cluster"];
    let ca = base64::engine::general_purpose::STANDARD
        .decode(cluster["certificate-authority-data"].as_str().unwrap())
        .unwrap();
    let token = yaml["users"][0]["user"]["token"].as_str().unwrap().to_string();
    (cluster["server"].as_str().unwrap().to_string(), ca, token)
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

/// GET `path` over TLS (verifying `host` against the CA) with HTTP/2 or HTTP/1.1 by `alpn`.
async fn get(
    addr: SocketAddr,
    host: &str,
    ca_pem: &[u8],
    alpn: &[u8],
    path: &str,
    token: Option<&str>,
) -> Result<(StatusCode, String), String> {
    let connector = tokio_rustls::TlsConnector::from(client_config(ca_pem, alpn));
    let tcp = TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from(host.to_string()).unwrap();
    let stream = connector.connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(alpn), "the server agrees on ALPN");
    let mut request = Request::get(format!("https://{host}{path}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Empty::<Bytes>::new()).unwrap();
    let io = TokioIo::new(stream);
    let response = if alpn == b"h2" {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.unwrap();
        tokio::spawn(conn);
        sender.send_request(request).await.map_err(|e| format!("request: {e}"))?
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        sender.send_request(request).await.map_err(|e| format!("request: {e}"))?
    };
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

struct Served {
    addr: SocketAddr,
    kubeconfig: std::path::PathBuf,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
    _state: StateDir,
    _tmp: tempfile::TempDir,
}

/// Serve `router` (or the API stub with the state dir's token) as the daemon does.
async fn serve(router: Option<axum::Router>) -> Served {
    let tmp = tempfile::tempdir().unwrap();
    let state = StateDir::open(&tmp.path().join("state")).unwrap();
    let token = state.token().unwrap();
    let certs = state.certificates(&[]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let kubeconfig = tmp.path().join("kube/config");
    kubeconfig::write(&kubeconfig, &server::server_url(addr), &certs.ca_pem, &token).unwrap();
    let router = router.unwrap_or_else(|| {
        api::router(SharedStore::in_memory(), ApiOptions { token: Some(token), ..ApiOptions::default() })
    });
    let config = tls::server_config(&certs.server_cert_pem, &certs.server_key_pem).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    let done = tokio::spawn(server::serve(listener, config, router, shutdown, Duration::from_secs(5)));
    Served { addr, kubeconfig, stop, done, _state: state, _tmp: tmp }
}

#[tokio::test]
async fn token_required_over_h2_and_http1_with_the_kubeconfig_ca() {
    let served = serve(None).await;
    let (url, ca, token) = read_kubeconfig(&served.kubeconfig);
    assert_eq!(url, format!("https://{}", served.addr));
    for alpn in [&b"h2"[..], b"http/1.1"] {
        for host in ["127.0.0.1", "localhost"] {
            let ok = get(served.addr, host, &ca, alpn, "/healthz", Some(&token)).await.unwrap();
            assert_eq!(ok, (StatusCode::OK, "ok".to_string()), "{host} {alpn:?}");
        }
        for wrong in [None, Some("wrong"), Some(&token[..token.len() - 1])] {
            let (status, body) = get(served.addr, "127.0.0.1", &ca, alpn, "/healthz", wrong).await.unwrap();
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{wrong:?}");
            let status: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["reason"], "Unauthorized");
            assert_eq!(status["code"], 401);
        }
    }
    served.stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served.done).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_client_trusting_another_ca_or_name_is_refused() {
    let served = serve(None).await;
    let (_, ca, token) = read_kubeconfig(&served.kubeconfig);
    let other_ca = tls::generate_ca().unwrap().cert_pem;
    let err = get(served.addr, "127.0.0.1", other_ca.as_bytes(), b"h2", "/healthz", Some(&token)).await.unwrap_err();
    assert!(err.starts_with("TLS"), "{err}");
    let err = get(served.addr, "example.com", &ca, b"h2", "/healthz", Some(&token)).await.unwrap_err();
    assert!(err.starts_with("TLS"), "not a name in the certificate: {err}");
    // The server goes on serving after failed handshakes.
    assert_eq!(get(served.addr, "127.0.0.1", &ca, b"h2", "/healthz", Some(&token)).await.unwrap().0, StatusCode::OK);
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish_and_stops_accepting() {
    let slow = axum::Router::new().route(
        "/slow",
        axum::routing::get(|| async {
            tokio::time::sleep(Duration::from_millis(700)).await;
            "done"
        }),
    );
    let served = serve(Some(slow)).await;
    let (_, ca, _) = read_kubeconfig(&served.kubeconfig);
    let addr = served.addr;
    // Stop while a request is in flight on each protocol: both complete, then the server returns.
    let mut in_flight = Vec::new();
    for alpn in [&b"h2"[..], b"http/1.1"] {
        let ca = ca.clone();
        in_flight.push(tokio::spawn(async move { get(addr, "127.0.0.1", &ca, alpn, "/slow", None).await }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    served.stop.send(()).unwrap();
    for request in in_flight {
        assert_eq!(request.await.unwrap().unwrap(), (StatusCode::OK, "done".to_string()));
    }
    tokio::time::timeout(Duration::from_secs(5), served.done).await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "drained well within the grace period");
    assert!(TcpStream::connect(addr).await.is_err(), "no longer accepting");
}
