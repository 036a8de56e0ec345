//! The `log` subresource: `GET .../namespaces/NS/PLURAL/NAME/log`, plain text, as Kubernetes
//! serves `pods/log`, so `kubectl get --raw` and any HTTP client read it.
//!
//! Query: `source` (the kind's sources, see [`drydock_engine::logs::sources_of`]; default
//! `stdout`, or `system` for kinds without output), `follow`, `timestamps` (each line prefixed
//! with its RFC 3339 time, as Kubernetes does), `lineNumbers` (each line prefixed with its number
//! in its stream, which never changes: a reader can say which lines it saw), `tailLines`,
//! `sinceSeconds`, `limitBytes`.
//!
//! *Guarantees*
//! - An unknown source is a 400 `Status` naming the allowed ones; an object that is not there is
//!   a 404; a bad number is a 400. Nothing is streamed before these checks pass.
//! - A follower ends when its source completes (the container exited and its output was drained,
//!   a pull settled) or its object is deleted; it waits for a container not yet created.
//! - The server's shutdown ([`super::ApiOptions::stopping`]) ends a follower at once.
//! - Each request is its own [`Follower`]: a cursor into the hub. A slow client holds back only
//!   its own response (the body is produced as the client takes it: backpressure, at most one
//!   batch buffered); a client that falls behind the hub's window is told so in the stream
//!   (`... N lines dropped: the reader fell behind ...`) and goes on from the oldest kept line.
//!   No reader blocks the engine, another reader, or a deletion.
//!
//! *Caveats*: a stream is re-checked at least once a second besides its wake-ups, so an end the
//! hub and the store do not announce (none is known) is seen within a second.

use super::AppState;
use super::resource::{Call, Query};
use super::status::{ApiError, ApiResult};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use drydock_adapters::clock::wall_now;
use drydock_engine::WallTime;
use drydock_engine::logs::{Chunk, FollowOptions, Follower, LogLine, Source, Step, default_source};
use std::convert::Infallible;
use std::time::Duration;

/// Lines taken from the hub at a time (the most one response buffers).
const BATCH: usize = 500;
/// A waiting follower looks again at least this often.
const RECHECK: Duration = Duration::from_secs(1);

/// How a response writes its lines.
#[derive(Clone, Copy, Debug, Default)]
struct Format {
    timestamps: bool,
    line_numbers: bool,
    limit_bytes: Option<u64>,
}

/// Answer a log request: checks first, then a streaming body.
pub(super) fn serve(call: &Call, name: &str) -> ApiResult<Response> {
    let key = call.path.key(name);
    let object = call
        .state
        .store
        .read(|s| s.get(&key).cloned())
        .ok_or_else(|| ApiError::not_found(call.path.desc.subject(name)))?;
    let source = match call.query.get("source") {
        None | Some("") => default_source(&object.kind),
        Some(given) => Source::parse(&object.kind, given).map_err(|e| ApiError::BadRequest(e.to_string()))?,
    };
    let options = FollowOptions {
        follow: call.query.flag("follow")?,
        tail_lines: number(&call.query, "tailLines")?,
        since: number(&call.query, "sinceSeconds")?
            .map(|s| WallTime(wall_now().0.saturating_sub(s.saturating_mul(1_000)))),
    };
    let format = Format {
        timestamps: call.query.flag("timestamps")?,
        line_numbers: call.query.flag("lineNumbers")?,
        limit_bytes: number(&call.query, "limitBytes")?,
    };
    if format.limit_bytes == Some(0) {
        return Err(ApiError::BadRequest("limitBytes must be positive".into()));
    }
    let follower = Follower::open(&object, source, options);
    let mut response =
        (StatusCode::OK, Body::from_stream(stream(call.state.clone(), follower, format))).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    Ok(response)
}

/// A non-negative whole number from the query, if given.
fn number(query: &Query, name: &str) -> ApiResult<Option<u64>> {
    match query.get(name) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| ApiError::BadRequest(format!("{name} must be a whole number of 0 or more, not {text:?}"))),
    }
}

fn stream(
    state: AppState,
    mut follower: Follower,
    format: Format,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> {
    async_stream::stream! {
        let mut hub_changed = state.logs.subscribe();
        let mut store_changed = state.store.subscribe();
        let mut sent: u64 = 0;
        loop {
            hub_changed.borrow_and_update();
            store_changed.borrow_and_update();
            // Lock order: the hub, then the store (writers never hold both).
            let step = state.logs.read(|hub| {
                state.store.read(|store| follower.poll(hub, &|key| store.get(key).cloned(), BATCH))
            });
            match step {
                Step::Lines(chunk) => {
                    let (bytes, full) = render(&chunk, format, &mut sent);
                    yield Ok(bytes);
                    if full {
                        break;
                    }
                }
                Step::End => break,
                Step::Pending => {
                    tokio::select! {
                        _ = hub_changed.changed() => {}
                        _ = store_changed.changed() => {}
                        () = tokio::time::sleep(RECHECK) => {}
                        () = state.options.stopping.stopped() => break,
                    }
                }
            }
        }
    }
}

/// The text of `chunk`, within what `limitBytes` leaves (`sent` so far); `true` when the limit is
/// reached.
fn render(chunk: &Chunk, format: Format, sent: &mut u64) -> (Bytes, bool) {
    let mut text = String::new();
    if chunk.dropped > 0 {
        text.push_str(&format!(
            "... {} lines dropped: the reader fell behind what the daemon keeps ...\n",
            chunk.dropped
        ));
    }
    for line in &chunk.lines {
        text.push_str(&line_text(line, format));
    }
    let mut bytes = text.into_bytes();
    let mut full = false;
    if let Some(limit) = format.limit_bytes {
        let left = usize::try_from(limit.saturating_sub(*sent)).unwrap_or(usize::MAX);
        if bytes.len() >= left {
            bytes.truncate(left);
            full = true;
        }
    }
    *sent += bytes.len() as u64;
    (Bytes::from(bytes), full)
}

fn line_text(line: &LogLine, format: Format) -> String {
    let mut text = String::new();
    if format.line_numbers {
        text.push_str(&format!("{} ", line.number));
    }
    if format.timestamps {
        text.push_str(&super::times::millis(line.time));
        text.push(' ');
    }
    text.push_str(&line.text);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_cuts_the_stream_and_a_late_reader_is_told_what_it_missed() {
        let line = |number, text: &str| LogLine { number, time: WallTime(0), text: text.into() };
        let chunk = Chunk { lines: vec![line(4, "four"), line(5, "five")], dropped: 3 };
        let format = Format { line_numbers: true, limit_bytes: Some(80), ..Format::default() };
        let mut sent = 0;
        let (bytes, full) = render(&chunk, format, &mut sent);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("... 3 lines dropped"), "{text}");
        assert!(full, "80 bytes: the marker and part of a line");
        assert_eq!(sent, 80);
        let (bytes, full) = render(
            &Chunk { lines: vec![line(6, "six")], dropped: 0 },
            Format { line_numbers: true, ..Format::default() },
            &mut 0,
        );
        assert_eq!((&bytes[..], full), (&b"6 six\n"[..], false));
    }
}
