//! Image references as Docker's daemon parses them: repository and tag or digest, ids and their
//! short form.

use drydock_engine::api::normalize_image_reference;

/// A normalized reference split into its repository name and its tag or digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Selector {
    Tag(String),
    Digest(String),
}

pub(super) fn split_reference(reference: &str) -> (String, Selector) {
    let normalized = normalize_image_reference(reference);
    if let Some((name, digest)) = normalized.split_once('@') {
        return (name.to_string(), Selector::Digest(digest.to_string()));
    }
    let slash = normalized.rfind('/').map_or(0, |i| i + 1);
    match normalized[slash..].rfind(':') {
        Some(colon) => {
            let at = slash + colon;
            (normalized[..at].to_string(), Selector::Tag(normalized[at + 1..].to_string()))
        }
        None => (normalized, Selector::Tag("latest".into())),
    }
}

pub(super) fn is_tag_ref(normalized: &str) -> bool {
    !normalized.contains('@')
}

pub(super) fn ref_name(normalized: &str) -> String {
    split_reference(normalized).0
}

/// `sha256:<64 hex>` or `<64 hex>`: what Docker parses as an id rather than a name.
pub(super) fn full_id(reference: &str) -> Option<String> {
    let hex = reference.strip_prefix("sha256:").unwrap_or(reference);
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
        .then(|| format!("sha256:{hex}"))
}

/// Docker's `stringid.TruncateID`: 12 hex characters, without the algorithm.
pub(super) fn truncate_id(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    hex.get(..12).unwrap_or(hex)
}
