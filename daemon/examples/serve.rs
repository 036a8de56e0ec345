//! Serve the API over plain HTTP on 127.0.0.1 with an in-memory store (no engine), for trying it
//! with kubectl:
//!
//! ```text
//! cargo run -p drydock-daemon --example serve -- 127.0.0.1:8080 my-token
//! kubectl --server http://127.0.0.1:8080 --token my-token api-resources
//! ```
//!
//! Arguments: `[ADDR] [TOKEN]` (defaults `127.0.0.1:0`, `drydock`; `-`: no token); prints the bound
//! address.

use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, router};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let token = args.next().unwrap_or_else(|| "drydock".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("serving on http://{}", listener.local_addr()?);
    let token = (token != "-").then_some(token);
    let app = router(SharedStore::in_memory(), ApiOptions { token, ..ApiOptions::default() });
    axum::serve(listener, app).await?;
    Ok(())
}
