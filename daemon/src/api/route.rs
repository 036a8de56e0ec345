//! Routing of `/api/v1/...` and `/apis/{group}/{version}/...`: resolve the path against the
//! registry, then hand the request to the handler its method and shape call for (the plain verbs
//! in `resource`, `watch` and `patch`).

use super::resource::{self, Call, Query};
use super::status::ApiError;
use super::status::ApiResult;
use super::{AppState, kinds, log, patch, watch};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};

/// The fallback handler: resolve the path, then route on method and shape.
pub async fn dispatch(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let registry_kinds = |gv: &str| state.store.read(|s| kinds::in_group_version(s.registry(), gv));
    let path = match resource::resolve(parts.uri.path(), registry_kinds) {
        Ok(path) => path,
        Err(error) => return error.into_response(),
    };
    let query = Query::parse(parts.uri.query());
    let dry_run = match resource::dry_run(&query) {
        Ok(dry_run) => dry_run,
        Err(error) => return error.into_response(),
    };
    let call = Call { state, path, query, headers: parts.headers, dry_run };
    route(call, parts.method, body).await.unwrap_or_else(IntoResponse::into_response)
}

async fn route(call: Call, method: Method, body: Body) -> ApiResult<Response> {
    let name = call.path.name.clone();
    match (call.path.subresource.as_deref(), name, method) {
        (None, None, Method::GET) if call.query.flag("watch")? => {
            watch::serve(&call.state, &call.path, &call.query, &call.headers)
        }
        (None, None, Method::GET) => resource::list(&call),
        (None, None, Method::POST) => resource::create(&call, body).await,
        (None, None, Method::DELETE) => resource::delete_collection(&call, body).await,
        (None, Some(name), Method::GET) => resource::get(&call, &name),
        (None, Some(name), Method::PUT) => resource::update(&call, &name, body, false).await,
        (None, Some(name), Method::PATCH) => patch::serve(&call, &name, body, false).await,
        (None, Some(name), Method::DELETE) => resource::delete(&call, &name, body).await,
        (Some("status"), Some(name), Method::GET) => resource::get(&call, &name),
        (Some("log"), Some(name), Method::GET) => log::serve(&call, &name),
        (Some("status"), Some(name), Method::PUT) => resource::update(&call, &name, body, true).await,
        (Some("status"), Some(name), Method::PATCH) => patch::serve(&call, &name, body, true).await,
        _ => Err(ApiError::MethodNotAllowed),
    }
}
