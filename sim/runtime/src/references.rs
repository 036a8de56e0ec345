//! Image references as Docker's daemon parses them: repository and tag or digest, ids and their
//! short form.
//!
//! This is the simulator's own model of Docker's reference rules (`distribution/reference`'s
//! `ParseNormalizedNamed`, `TagNameOnly` and `FamiliarString`, as the 20.10 daemon vendors them),
//! written from their documented behaviour and sharing no code with the engine, so that a bug in
//! the engine's normalization shows up as a disagreement instead of being mirrored here:
//!
//! - a reference is `[domain/]path[:tag][@digest]`; the first `/`-separated component is a domain
//!   only if it holds a `.` or a `:` or is `localhost` (so `Foo/bar` is a path, and refused as
//!   uppercase); otherwise the domain is `docker.io`;
//! - `index.docker.io` is `docker.io`; on `docker.io` a single-component path is an official image,
//!   under `library/`;
//! - the path (up to the first `:` after the domain) must be lowercase; the domain and the tag keep
//!   their case;
//! - a name with neither tag nor digest means tag `latest`; a digest reference gets no tag, and a
//!   reference with both keeps both;
//! - 64 lowercase hexadecimal digits alone are an image id, never a name;
//! - the familiar form drops `docker.io/`, and `library/` when what follows is one component.

use drydock_engine::runtime::RuntimeError;

/// Docker Hub's domain, the default.
pub const DEFAULT_DOMAIN: &str = "docker.io";
/// Docker Hub's old domain, read as [`DEFAULT_DOMAIN`].
const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// Where Docker Hub's official images live.
const OFFICIAL_REPOSITORY: &str = "library";
/// The tag a name alone means.
const DEFAULT_TAG: &str = "latest";

/// Why a string is not an image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReferenceError {
    /// Outside the grammar (`invalid reference format`).
    Format,
    /// The repository path has uppercase letters.
    Uppercase,
    /// 64 hexadecimal digits: an image id, not a name.
    Id,
}

/// A parsed, normalized image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    /// `docker.io`, `localhost:5000`, `quay.io`, ...
    pub domain: String,
    /// The repository path on that domain, `library/busybox` for an official image.
    pub path: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageReference {
    /// `ParseNormalizedNamed`.
    pub fn parse(reference: &str) -> Result<Self, ReferenceError> {
        if reference.len() == 64 && reference.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(ReferenceError::Id);
        }
        let (domain, remainder) = match reference.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
            _ => (DEFAULT_DOMAIN, reference),
        };
        let repository = remainder.split(':').next().unwrap_or(remainder);
        if repository.to_ascii_lowercase() != repository {
            return Err(ReferenceError::Uppercase);
        }
        let (path_and_tag, digest) = match remainder.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (remainder, None),
        };
        let slash = path_and_tag.rfind('/').map_or(0, |i| i + 1);
        let (path, tag) = match path_and_tag[slash..].rfind(':') {
            Some(colon) => (&path_and_tag[..slash + colon], Some(&path_and_tag[slash + colon + 1..])),
            None => (path_and_tag, None),
        };
        let grammatical = digest.is_none_or(is_digest)
            && tag.is_none_or(is_tag)
            && domain.len() + 1 + path.len() <= NAME_MAX
            && is_domain(domain)
            && path.split('/').all(is_name_component);
        if !grammatical {
            return Err(ReferenceError::Format);
        }
        let domain = if domain == LEGACY_DEFAULT_DOMAIN { DEFAULT_DOMAIN } else { domain };
        let path = if domain == DEFAULT_DOMAIN && !path.contains('/') {
            format!("{OFFICIAL_REPOSITORY}/{path}")
        } else {
            path.to_string()
        };
        Ok(ImageReference {
            domain: domain.to_string(),
            path,
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// `domain/path`: the repository.
    pub fn name(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// The full form, with `latest` for a name alone (`TagNameOnly`).
    pub fn canonical(&self) -> String {
        let tag = match (&self.tag, &self.digest) {
            (None, None) => Some(DEFAULT_TAG),
            (tag, _) => tag.as_deref(),
        };
        self.with_name(&self.name(), tag)
    }

    /// `FamiliarString` of the canonical form: `busybox:latest`, `team/app:1`, `quay.io/a/b:1`.
    pub fn familiar(&self) -> String {
        let name = if self.domain == DEFAULT_DOMAIN {
            match self.path.strip_prefix("library/") {
                Some(official) if !official.contains('/') => official.to_string(),
                _ => self.path.clone(),
            }
        } else {
            self.name()
        };
        let tag = match (&self.tag, &self.digest) {
            (None, None) => Some(DEFAULT_TAG),
            (tag, _) => tag.as_deref(),
        };
        self.with_name(&name, tag)
    }

    fn with_name(&self, name: &str, tag: Option<&str>) -> String {
        let mut out = name.to_string();
        if let Some(tag) = tag {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(digest);
        }
        out
    }
}

/// The canonical form of `reference` (`docker.io/library/busybox:latest`), or `None` if Docker
/// would not parse it as a name (an id, or outside the grammar).
pub fn normalize_reference(reference: &str) -> Option<String> {
    ImageReference::parse(reference).ok().map(|r| r.canonical())
}

/// The familiar form of `reference` (`busybox:latest`), or `None` as for [`normalize_reference`].
pub fn familiar_reference(reference: &str) -> Option<String> {
    ImageReference::parse(reference).ok().map(|r| r.familiar())
}

/// A key under which `reference` is counted: its canonical form, or itself when it is no name.
pub fn reference_key(reference: &str) -> String {
    normalize_reference(reference).unwrap_or_else(|| reference.to_string())
}

/// A normalized reference split into its repository name and its tag or digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Selector {
    Tag(String),
    Digest(String),
}

/// The repository and the tag or digest `reference` names; a string that is no reference is a
/// repository of its own, at `latest` (it names nothing that can exist).
pub(super) fn split_reference(reference: &str) -> (String, Selector) {
    match ImageReference::parse(reference) {
        Ok(parsed) => {
            let selector = match (&parsed.digest, &parsed.tag) {
                (Some(digest), _) => Selector::Digest(digest.clone()),
                (None, Some(tag)) => Selector::Tag(tag.clone()),
                (None, None) => Selector::Tag(DEFAULT_TAG.into()),
            };
            (parsed.name(), selector)
        }
        Err(_) => (reference.to_string(), Selector::Tag(DEFAULT_TAG.into())),
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

/// Docker's reference grammar (as the 20.10 daemon parses a create's image, a pull and an image
/// inspection): an image id, or a reference [`ImageReference::parse`] accepts. A reference outside
/// it is refused (400) with `invalid reference format`, or `invalid reference format: repository
/// name must be lowercase`. An empty reference is left to the caller.
pub(super) fn check_reference(reference: &str) -> Result<(), RuntimeError> {
    if reference.is_empty() || full_id(reference).is_some() {
        return Ok(());
    }
    match ImageReference::parse(reference) {
        Ok(_) | Err(ReferenceError::Id) => Ok(()),
        Err(ReferenceError::Uppercase) => {
            Err(RuntimeError::Invalid("invalid reference format: repository name must be lowercase".into()))
        }
        Err(ReferenceError::Format) => Err(RuntimeError::Invalid("invalid reference format".into())),
    }
}

/// The most a repository name may hold.
const NAME_MAX: usize = 255;

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

    /// Docker's documented normalization, case by case: the canonical and the familiar form, or
    /// why the string is no name.
    #[test]
    fn docker_normalization_table() {
        let sha = format!("sha256:{}", "ab".repeat(32));
        let hex = "0123456789abcdef".repeat(4);
        let ok: Vec<(String, String, String)> = [
            ("busybox", "docker.io/library/busybox:latest", "busybox:latest"),
            ("busybox:1.36", "docker.io/library/busybox:1.36", "busybox:1.36"),
            ("library/busybox", "docker.io/library/busybox:latest", "busybox:latest"),
            ("docker.io/busybox", "docker.io/library/busybox:latest", "busybox:latest"),
            ("docker.io/library/busybox:latest", "docker.io/library/busybox:latest", "busybox:latest"),
            ("index.docker.io/busybox:1", "docker.io/library/busybox:1", "busybox:1"),
            ("index.docker.io/team/app", "docker.io/team/app:latest", "team/app:latest"),
            ("team/app", "docker.io/team/app:latest", "team/app:latest"),
            ("library/a/b", "docker.io/library/a/b:latest", "library/a/b:latest"),
            ("localhost", "docker.io/library/localhost:latest", "localhost:latest"),
            ("localhost:5000", "docker.io/library/localhost:5000", "localhost:5000"),
            ("localhost/app", "localhost/app:latest", "localhost/app:latest"),
            ("localhost:5000/a/b:c", "localhost:5000/a/b:c", "localhost:5000/a/b:c"),
            (
                "127.0.0.1:5487/drydock-test/busybox",
                "127.0.0.1:5487/drydock-test/busybox:latest",
                "127.0.0.1:5487/drydock-test/busybox:latest",
            ),
            ("quay.io/a/b:1", "quay.io/a/b:1", "quay.io/a/b:1"),
            ("Registry.IO/app", "Registry.IO/app:latest", "Registry.IO/app:latest"),
            ("app:V1.2-rc_3", "docker.io/library/app:V1.2-rc_3", "app:V1.2-rc_3"),
            ("a__b.c-d", "docker.io/library/a__b.c-d:latest", "a__b.c-d:latest"),
            (&format!("sha256:{hex}"), &format!("docker.io/library/sha256:{hex}"), &format!("sha256:{hex}")),
        ]
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .chain([
            (format!("x@{sha}"), format!("docker.io/library/x@{sha}"), format!("x@{sha}")),
            (format!("x:1@{sha}"), format!("docker.io/library/x:1@{sha}"), format!("x:1@{sha}")),
            (format!("quay.io/t/x@{sha}"), format!("quay.io/t/x@{sha}"), format!("quay.io/t/x@{sha}")),
        ])
        .collect();
        for (reference, canonical, familiar) in &ok {
            assert_eq!(normalize_reference(reference).as_ref(), Some(canonical), "{reference}");
            assert_eq!(familiar_reference(reference).as_ref(), Some(familiar), "{reference}");
            // Both forms are fixed points.
            assert_eq!(normalize_reference(canonical).as_ref(), Some(canonical), "{canonical}");
            assert_eq!(normalize_reference(familiar).as_ref(), Some(canonical), "{familiar}");
        }
        for (reference, why) in [
            ("BusyBox", ReferenceError::Uppercase),
            ("Foo/bar", ReferenceError::Uppercase),
            ("docker.io/Team/app", ReferenceError::Uppercase),
            (hex.as_str(), ReferenceError::Id),
            ("", ReferenceError::Format),
            ("busybox:", ReferenceError::Format),
            ("a//b", ReferenceError::Format),
            ("app-", ReferenceError::Format),
            ("app@sha256:abc", ReferenceError::Format),
            ("app:tag:x", ReferenceError::Format),
        ] {
            assert_eq!(ImageReference::parse(reference), Err(why), "{reference}");
        }
        assert_eq!(split_reference("busybox"), ("docker.io/library/busybox".into(), Selector::Tag("latest".into())));
        assert_eq!(
            split_reference(&format!("x:1@{sha}")),
            ("docker.io/library/x".into(), Selector::Digest(sha.clone()))
        );
    }

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
