//! A seeded generator of malformed requests: bad JSON, wrong kinds, huge bodies, unknown fields,
//! bad selectors, bad patch documents, bad content types, bad resourceVersions, bad paths,
//! methods, tokens, Accept headers and query parameters, with random unknown query parameters
//! and headers on top. Every answer must be a 4xx `Status`
//! with a reason, and the store must be unchanged.

use crate::common::*;
use drydock_daemon::api::ApiOptions;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Instant;

const TOKEN: &str = "fuzz-token";
const LIMIT: usize = 4096;
const REQUESTS: usize = 10_000;
const ITEM: &str = "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/a";

struct Gen(ChaCha8Rng);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn word(&mut self) -> String {
        let len = 1 + self.below(8);
        (0..len).map(|_| char::from(b'a' + self.below(26) as u8)).collect()
    }
}

/// One generated request: method, path and query, content type, accept, token, body.
struct Req {
    category: &'static str,
    method: &'static str,
    uri: String,
    content_type: Option<&'static str>,
    accept: Option<&'static str>,
    token: Option<String>,
    body: Vec<u8>,
}

impl Req {
    fn new(category: &'static str, method: &'static str, uri: impl Into<String>) -> Self {
        Req {
            category,
            method,
            uri: uri.into(),
            content_type: None,
            accept: None,
            token: Some(TOKEN.into()),
            body: Vec::new(),
        }
    }

    fn json(mut self, content_type: &'static str, body: &Value) -> Self {
        self.content_type = Some(content_type);
        self.body = serde_json::to_vec(body).unwrap();
        self
    }
}

fn valid_pc(name: &str) -> Value {
    json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer", "metadata": {"name": name}, "spec": {"image": "busybox"}})
}

fn bad_json(g: &mut Gen) -> Req {
    let mut text = serde_json::to_vec(&valid_pc(&format!("n{}", g.word()))).unwrap();
    text.truncate(1 + g.below(text.len() - 2)); // never empty: an empty DELETE body is valid
    if g.below(3) == 0 {
        text.insert(0, *g.pick(&[b'}', b']', 0u8, b'x']));
    }
    let (method, uri, ct) = *g.pick(&[
        ("POST", PCS, "application/json"),
        ("PUT", ITEM, "application/json"),
        ("PATCH", ITEM, "application/merge-patch+json"),
        ("PATCH", ITEM, "application/json-patch+json"),
        ("PATCH", ITEM, "application/strategic-merge-patch+json"),
        ("DELETE", ITEM, "application/json"),
    ]);
    Req { body: text, content_type: Some(ct), ..Req::new("bad json", method, uri) }
}

fn wrong_type(g: &mut Gen) -> Req {
    let mut body = valid_pc(&format!("n{}", g.word()));
    match g.below(3) {
        0 => body["kind"] = json!(g.pick(&["ContainerImage", "Namespace", "Pod", "physicalcontainer", ""]).to_string()),
        1 => body["apiVersion"] = json!(g.pick(&["v1", "drydock.dev/v2", "apps/v1", "drydock.dev"]).to_string()),
        _ => body["kind"] = json!(g.below(100)),
    }
    let (method, uri) = *g.pick(&[("POST", PCS), ("PUT", ITEM)]);
    Req::new("wrong kind", method, uri).json("application/json", &body)
}

fn huge(g: &mut Gen) -> Req {
    let mut body = valid_pc(&format!("n{}", g.word()));
    body["metadata"]["annotations"] = json!({"big": "x".repeat(LIMIT + g.below(3 * LIMIT))});
    let (method, uri, ct) = *g.pick(&[
        ("POST", PCS, "application/json"),
        ("PUT", ITEM, "application/json"),
        ("PATCH", ITEM, "application/merge-patch+json"),
    ]);
    Req::new("huge body", method, uri).json(ct, &body)
}

fn unknown_fields(g: &mut Gen) -> Req {
    let mut body = valid_pc(&format!("n{}", g.word()));
    let field = g.word();
    let strict: bool = match g.below(3) {
        0 => {
            body["spec"][format!("{field}Z")] = json!(1);
            true // without Strict, an unknown spec field is pruned with a warning
        }
        1 => {
            body[format!("{field}Z")] = json!(true);
            true
        }
        _ => {
            body["metadata"][format!("{field}Z")] = json!("x");
            true
        }
    };
    let uri = if strict { format!("{PCS}?fieldValidation=Strict") } else { PCS.to_string() };
    Req::new("unknown fields", "POST", uri).json("application/json", &body)
}

const BAD_LABELS: [&str; 14] = [
    "a in x",
    "(a",
    "a=b=c",
    "=b",
    "a b c",
    "-a",
    "a!=)",
    "!",
    "a in (x",
    "x/y/z",
    "A B",
    "a in (x,y",
    "a notin x",
    ",=",
];
const BAD_FIELDS: [&str; 6] =
    ["spec.image=x", "metadata.name", "status.phase=Running", "metadata.labels=x", "kind==x", "x!"];

fn bad_selector(g: &mut Gen) -> Req {
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let valid = g.pick(&["", "a=b,", "app in (web),", "!f,"]).to_string();
    let query = if g.below(2) == 0 {
        format!("labelSelector={}", enc(&format!("{valid}{}", g.pick(&BAD_LABELS))))
    } else {
        format!("fieldSelector={}", enc(&format!("{}{}", g.pick(&["", "metadata.name=a,"]), g.pick(&BAD_FIELDS))))
    };
    let watch = if g.below(2) == 0 { "&watch=1" } else { "" };
    Req::new(
        "bad selector",
        "GET",
        format!("{}?{query}{watch}", g.pick(&[PCS, "/apis/drydock.dev/v1/physicalcontainers", "/api/v1/namespaces"])),
    )
}

fn bad_patch(g: &mut Gen) -> Req {
    let json_patches = [
        json!({"op": "add"}),
        json!([{"op": "frobnicate", "path": "/metadata/labels/x", "value": "1"}]),
        json!([{"op": "add", "value": "1"}]),
        json!([{"op": "remove", "path": "/metadata/labels/absent"}]),
        json!([{"op": "test", "path": "/spec/image", "value": "other"}]),
        json!([{"op": "replace", "path": "/kind", "value": "ContainerImage"}]),
        json!([{"op": "replace", "path": "/metadata/name", "value": "b"}]),
        json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": "abc"}]),
        json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"}, {"op": "add", "path": "/metadata/labels/q", "value": "1"}]),
        json!([{"op": "add", "path": "/spec/command", "value": "not-a-list"}]),
        json!([{"op": "move", "from": "/nowhere", "path": "/x"}]),
        json!("not a patch"),
    ];
    let merge_patches = [
        json!({"kind": "Other"}),
        json!({"apiVersion": "v2"}),
        json!([1, 2]),
        json!("scalar"),
        json!({"metadata": {"name": "zz"}}),
        json!({"metadata": {"resourceVersion": "1", "labels": {"q": "1"}}}),
        json!({"metadata": {"namespace": "elsewhere"}}),
        json!({"spec": {"image": "other"}}),
        json!({"metadata": {"labels": {"bad key!": "v"}}}),
        json!({"metadata": 5}),
    ];
    if g.below(2) == 0 {
        Req::new("bad patch", "PATCH", ITEM).json("application/json-patch+json", g.pick(&json_patches))
    } else {
        let ct = *g.pick(&["application/merge-patch+json", "application/strategic-merge-patch+json"]);
        Req::new("bad patch", "PATCH", ITEM).json(ct, g.pick(&merge_patches))
    }
}

fn bad_content_type(g: &mut Gen) -> Req {
    let (method, uri) = *g.pick(&[("POST", PCS), ("PUT", ITEM), ("PATCH", ITEM)]);
    let ct = *g.pick(&[
        "text/plain",
        "application/xml",
        "",
        "application/vnd.kubernetes.protobuf",
        "multipart/form-data",
        "application/jsonx",
    ]);
    let mut req = Req::new("bad content type", method, uri).json("text/plain", &valid_pc("a"));
    // No content type at all is JSON to the API server, for a create or an update; a patch must
    // name its kind.
    req.content_type = match (ct, method) {
        ("", "PATCH") => None,
        ("", _) => Some("text/plain"),
        (ct, _) => Some(ct),
    };
    if method == "PATCH" && g.below(2) == 0 {
        req.content_type = Some("application/json"); // Kubernetes refuses a plain JSON patch too
    }
    req
}

const BAD_RVS: [&str; 8] = ["abc", "-1", "1.5", "0x10", "%201", "18446744073709551616", "1e3", "NaN"];

fn bad_resource_version(g: &mut Gen) -> Req {
    let rv = *g.pick(&BAD_RVS);
    match g.below(4) {
        0 => Req::new("bad resourceVersion", "GET", format!("{PCS}?watch=1&resourceVersion={rv}")),
        1 => Req::new("bad resourceVersion", "GET", format!("{PCS}?resourceVersion={rv}")),
        2 => {
            let mut body = valid_pc("a");
            body["metadata"]["resourceVersion"] = json!(if g.below(2) == 0 { json!(rv) } else { json!("1") });
            Req::new("bad resourceVersion", "PUT", ITEM).json("application/json", &body)
        }
        _ => Req::new("bad resourceVersion", "DELETE", ITEM)
            .json("application/json", &json!({"preconditions": {"resourceVersion": rv}})),
    }
}

fn bad_path(g: &mut Gen) -> Req {
    let word = format!("z{}", g.word()); // never an existing name
    let paths = [
        format!("/apis/drydock.dev/v2/namespaces/demo/{word}"),
        format!("/apis/{word}.dev/v1/physicalcontainers"),
        "/api/v1/pods".to_string(),
        format!("{ITEM}/{word}"),
        format!("{ITEM}/status/{word}"),
        format!("/apis/drydock.dev/v1/leases/{word}/status"),
        format!("/{word}"),
        format!("/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/{word}"),
        "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers//".to_string(),
    ];
    let path = g.pick(&paths).clone();
    let method = *g.pick(&["GET", "PUT", "PATCH", "DELETE"]);
    Req::new("bad path", method, path)
        .json("application/merge-patch+json", &json!({"metadata": {"labels": {"x": "1"}}}))
}

fn bad_method(g: &mut Gen) -> Req {
    let (method, uri) = *g.pick(&[
        ("POST", ITEM),
        ("PUT", PCS),
        ("PATCH", PCS),
        ("DELETE", PCS),
        ("POST", "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/a/status"),
        ("OPTIONS", ITEM),
        ("DELETE", "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/a/status"),
    ]);
    Req::new("bad method", method, uri).json("application/json", &valid_pc("a"))
}

fn bad_token(g: &mut Gen) -> Req {
    let word = g.word();
    let method: &'static str = ["GET", "POST", "DELETE"][g.below(3)];
    let mut req = Req::new("bad token", method, *g.pick(&[PCS, ITEM, "/api", "/healthz", "/openapi/v3"]));
    req.token = g
        .pick(&[None, Some(word), Some(format!("{TOKEN}x")), Some(TOKEN[1..].to_string()), Some(String::new())])
        .clone();
    req.json("application/json", &valid_pc("zz"))
}

fn bad_accept(g: &mut Gen) -> Req {
    let accept = *g.pick(&[
        "application/vnd.kubernetes.protobuf",
        "text/html",
        "application/json;as=Table;g=wrong.io;v=v1",
        "application/json;as=Unknown;g=meta.k8s.io",
        "image/png",
    ]);
    let uri = *g.pick(&[PCS, ITEM]);
    Req { accept: Some(accept), ..Req::new("bad accept", "GET", uri) }
}

fn bad_query(g: &mut Gen) -> Req {
    let word = g.word();
    match g.below(9) {
        0 => Req::new("bad query", "DELETE", format!("{ITEM}?propagationPolicy={word}")),
        1 => Req::new("bad query", "GET", format!("{PCS}?includeObject={word}")),
        2 => Req::new("bad query", "POST", format!("{PCS}?fieldValidation={word}"))
            .json("application/json", &valid_pc("zz")),
        3 => Req::new("bad query", "GET", format!("{PCS}?watch={word}")),
        4 => Req::new("bad query", "GET", format!("{PCS}?watch=1&timeoutSeconds=-{}", g.below(9))),
        5 => Req::new("bad query", "POST", format!("{PCS}?dryRun={word}")).json("application/json", &valid_pc("zz")),
        6 => Req::new("bad query", "GET", format!("{PCS}?limit=-{}", g.below(9))),
        7 => Req::new("bad query", "GET", format!("{PCS}?limit=1&continue={word}")),
        _ => Req::new("bad query", "DELETE", format!("{ITEM}?gracePeriodSeconds={word}")),
    }
}

fn generate(g: &mut Gen) -> Req {
    let makers: [fn(&mut Gen) -> Req; 14] = [
        bad_json,
        wrong_type,
        huge,
        unknown_fields,
        bad_selector,
        bad_patch,
        bad_content_type,
        bad_resource_version,
        bad_path,
        bad_method,
        bad_token,
        bad_accept,
        bad_query,
        bad_patch,
    ];
    let mut req = g.pick(&makers)(g);
    if g.below(4) == 0 {
        req.uri = req.uri.replace("/demo/", "/nowhere/");
        req.category = "any, in a missing namespace";
    }
    if g.below(3) == 0 {
        // Unknown query parameters with random bytes change nothing about the refusal.
        let junk: Vec<u8> = (0..g.below(24)).map(|_| g.0.next_u32() as u8).collect();
        let junk: String = form_urlencoded::byte_serialize(&junk).collect();
        let sep = if req.uri.contains('?') { '&' } else { '?' };
        req.uri = format!("{}{sep}x{}={junk}", req.uri, g.word());
    }
    req
}

/// Random extra headers: unknown names, odd values, a second Accept-Encoding.
fn junk_headers(g: &mut Gen) -> Vec<(String, String)> {
    (0..g.below(3))
        .map(|_| {
            let value: String = (0..g.below(40)).map(|_| char::from(b' ' + (g.0.next_u32() % 95) as u8)).collect();
            (format!("x-{}", g.word()), value)
        })
        .collect()
}

type Snapshot = (u64, Vec<std::sync::Arc<drydock_engine::api::Object>>);

fn snapshot(app: &App) -> Snapshot {
    app.store.read(|s| (s.resource_version(), s.list(None, None)))
}

#[tokio::test]
async fn ten_thousand_malformed_requests_are_refused_with_a_status_and_change_nothing() {
    let app =
        app_with(store(1000), ApiOptions { token: Some(TOKEN.into()), max_body_bytes: LIMIT, ..ApiOptions::default() });
    for (uri, body) in [
        ("/api/v1/namespaces", json!({"kind": "Namespace", "metadata": {"name": "demo"}})),
        (
            PCS,
            json!({"kind": "PhysicalContainer", "metadata": {"name": "a", "labels": {"app": "web"}}, "spec": {"image": "busybox"}}),
        ),
        (
            "/apis/drydock.dev/v1/namespaces/demo/containerimages",
            json!({"kind": "ContainerImage", "metadata": {"name": "i"}, "spec": {"image": "busybox"}}),
        ),
    ] {
        let call = Call { token: Some(TOKEN), ..Call::new("POST", uri).json(&body) };
        assert_eq!(app.send(call).await.0.as_u16(), 201);
    }
    let before = snapshot(&app);
    let seed = std::env::var("DRYDOCK_API_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let mut g = Gen(ChaCha8Rng::seed_from_u64(seed));
    let mut counts: BTreeMap<(&str, u16), usize> = BTreeMap::new();
    let started = Instant::now();
    for i in 0..REQUESTS {
        let req = generate(&mut g);
        let call = Call {
            method: req.method,
            uri: &req.uri,
            content_type: req.content_type,
            accept: req.accept,
            token: req.token.as_deref(),
            body: req.body.clone(),
            headers: junk_headers(&mut g),
        };
        let (code, body) = app.send(call).await;
        let context = format!(
            "#{i} {} {} {} ct={:?} accept={:?} body={}",
            req.category,
            req.method,
            req.uri,
            req.content_type,
            req.accept,
            String::from_utf8_lossy(&req.body[..req.body.len().min(300)])
        );
        assert!(code.is_client_error(), "{code} for {context}: {body}");
        assert_eq!(body["kind"], "Status", "{context}: {body}");
        assert_eq!(body["code"], code.as_u16(), "{context}: {body}");
        assert!(body["reason"].as_str().is_some_and(|r| !r.is_empty()), "{context}: {body}");
        assert!(snapshot(&app) == before, "the store changed after {context}");
        *counts.entry((req.category, code.as_u16())).or_default() += 1;
    }
    eprintln!("{REQUESTS} malformed requests in {:?}: {counts:?}", started.elapsed());
}
