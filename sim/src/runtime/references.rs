//! Image references as Docker's daemon parses them: repository and tag or digest, ids and their
//! short form.

use drydock_engine::api::normalize_image_reference;
use drydock_engine::runtime::RuntimeError;

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

/// Docker's reference grammar (`distribution/reference`'s `ParseNormalizedNamed`, as the 20.10
/// daemon parses a create's image, a pull and an image inspection): an image id, or
/// `[domain/]component[/component...][:tag][@digest]`, where the first component is a domain
/// only if it has a `.` or a `:` or is `localhost`, and the repository path is lowercase. A
/// reference outside it is refused (400) with `invalid reference format`, or
/// `invalid reference format: repository name must be lowercase`. An empty reference is left to
/// the caller.
pub(super) fn check_reference(reference: &str) -> Result<(), RuntimeError> {
    if reference.is_empty() || full_id(reference).is_some() {
        return Ok(());
    }
    let (domain, remainder) = match reference.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("docker.io", reference),
    };
    let repository = remainder.split(':').next().unwrap_or(remainder);
    if repository.to_ascii_lowercase() != repository {
        return Err(RuntimeError::Invalid("invalid reference format: repository name must be lowercase".into()));
    }
    if !is_grammatical(domain, remainder) {
        return Err(RuntimeError::Invalid("invalid reference format".into()));
    }
    Ok(())
}

/// The most a repository name may hold.
const NAME_MAX: usize = 255;

/// `remainder` is `path[:tag][@digest]` on registry `domain`.
fn is_grammatical(domain: &str, remainder: &str) -> bool {
    let (path_and_tag, digest) = match remainder.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (remainder, None),
    };
    if digest.is_some_and(|d| !is_digest(d)) {
        return false;
    }
    let slash = path_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match path_and_tag[slash..].rfind(':') {
        Some(colon) => (&path_and_tag[..slash + colon], Some(&path_and_tag[slash + colon + 1..])),
        None => (path_and_tag, None),
    };
    tag.is_none_or(is_tag)
        && domain.len() + 1 + path.len() <= NAME_MAX
        && is_domain(domain)
        && path.split('/').all(is_name_component)
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or dashes.
fn is_name_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let ok = separator == "." || separator == "_" || separator == "__" || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// Host name components (letters of either case, digits, inner dashes) and an optional port.
fn is_domain(domain: &str) -> bool {
    let (host, port) = match domain.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    host.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
    })
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    !bytes.is_empty() && bytes.len() <= 128 && word(&bytes[0]) && bytes.iter().all(|b| word(b) || b"._-".contains(b))
}

/// `algorithm:hex`, the algorithm's parts `[A-Za-z][A-Za-z0-9]*` joined by `-_+.`, 32+ hex digits.
fn is_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else { return false };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        let bytes = part.as_bytes();
        !bytes.is_empty() && bytes[0].is_ascii_alphabetic() && bytes.iter().all(u8::is_ascii_alphanumeric)
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_reference_grammar() {
        // What the 20.10 daemon answered a create with each image (400 or "No such image").
        let valid = [
            "a__b",
            "localhost:5000/app",
            "a/b/c:1.0",
            "app:_x",
            "app:x_y-z.1",
            "127.0.0.1:99999/a",
            "busybox",
            "a--b",
            "Registry.IO/app",
            "drydock-test/busybox:latest",
        ];
        for reference in valid {
            assert_eq!(check_reference(reference), Ok(()), "{reference}");
        }
        let digest = format!("app@sha256:{}", "a".repeat(64));
        assert_eq!(check_reference(&digest), Ok(()));
        assert_eq!(check_reference(&"b".repeat(64)), Ok(()), "an id");
        let invalid = ["app-", "app:-x", "app:", "-app", "a..b", "a___b", "app@sha256:abc", "app:tag:x", "app:.x"];
        for reference in invalid {
            assert_eq!(check_reference(reference), Err(RuntimeError::Invalid("invalid reference format".into())));
        }
        for reference in ["App", "UPPER/app"] {
            assert_eq!(
                check_reference(reference),
                Err(RuntimeError::Invalid("invalid reference format: repository name must be lowercase".into())),
                "{reference}"
            );
        }
    }
}
