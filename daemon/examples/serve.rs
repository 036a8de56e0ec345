//! Serve the API on 127.0.0.1 with an in-memory store (no engine), for trying it with kubectl.
//!
//! ```text
//! cargo run -p drydock-daemon --example serve -- 127.0.0.1:8443 my-token --tls
//! kubectl --server https://127.0.0.1:8443 --insecure-skip-tls-verify --token my-token api-resources
//! ```
//!
//! Arguments: `[ADDR] [TOKEN] [--tls]` (defaults `127.0.0.1:0`, `drydock`; TOKEN `-`: no token).
//! Plain HTTP unless `--tls`, which serves a fresh self-signed certificate for 127.0.0.1 and
//! localhost. kubectl (client-go) sends a bearer token only over HTTPS, so a token needs `--tls`;
//! an in-process client (kube-rs, curl) sends it over plain HTTP too. Prints the bound address.

use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, router};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A TCP listener that completes a TLS handshake before handing a connection to axum.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else { continue };
            match self.acceptor.accept(stream).await {
                Ok(tls) => return (tls, addr),
                Err(error) => eprintln!("TLS handshake with {addr} failed: {error}"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

fn self_signed() -> Result<TlsAcceptor, Box<dyn std::error::Error>> {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tls = args.iter().any(|a| a == "--tls");
    let mut positional = args.into_iter().filter(|a| a != "--tls");
    let addr = positional.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let token = positional.next().unwrap_or_else(|| "drydock".into());
    let token = (token != "-").then_some(token);
    let app = router(SharedStore::in_memory(), ApiOptions { token, ..ApiOptions::default() });
    let tcp = TcpListener::bind(&addr).await?;
    if tls {
        println!("serving on https://{}", tcp.local_addr()?);
        axum::serve(TlsListener { tcp, acceptor: self_signed()? }, app).await?;
    } else {
        println!("serving on http://{}", tcp.local_addr()?);
        axum::serve(tcp, app).await?;
    }
    Ok(())
}
