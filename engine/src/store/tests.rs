//! Unit tests of the API store over the memory backend: the shared suite (`conformance`).

#![allow(clippy::unwrap_used)]

crate::store_conformance_tests!(|config| crate::store::Store::in_memory(crate::store::Registry::builtin(), config));

/// Every kind of store request, with what `is_read` must say of it.
#[test]
fn gets_and_lists_read_every_other_request_writes() {
    use crate::api::{Object, ObjectMeta};
    use crate::store::{DeleteOptions, StoreRequest};
    let object = Object::new("PhysicalContainer", ObjectMeta::named(Some("ns"), "a"), serde_json::json!({}));
    let key = object.key();
    let requests = [
        (StoreRequest::Get { key: key.clone() }, true),
        (StoreRequest::List { kind: None, namespace: None }, true),
        (StoreRequest::Create { object: object.clone() }, false),
        (StoreRequest::Update { object: object.clone() }, false),
        (StoreRequest::UpdateStatus { object }, false),
        (StoreRequest::Delete { key, options: DeleteOptions::default() }, false),
    ];
    for (request, read) in requests {
        assert_eq!(request.is_read(), read, "{}", request.describe());
        assert_eq!(request.changes_world(), !read, "{}", request.describe());
    }
}
