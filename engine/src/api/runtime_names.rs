//! The names the container runtime parses: image references (their grammar, the normalized form
//! that makes `nginx`, `nginx:latest` and `docker.io/library/nginx:latest` one image, and the
//! familiar form Docker shows) and container names.

/// Longest normalized repository name Docker accepts (`docker.io/library/<name>` counts).
const MAX_REPOSITORY_NAME: usize = 255;
/// Longest tag Docker accepts.
const MAX_TAG: usize = 128;

/// A Docker image reference, by Docker's own grammar (distribution's `reference` package, as
/// `ParseNormalizedNamed` applies it): `[host[:port]/]path[:tag][@algorithm:hex]`.
///
/// - The first component is a registry host if it has a `.` or a `:`, is `localhost`, or has an
///   uppercase letter; a host is dot-separated labels of letters, digits and inner `-`, or a
///   bracketed IPv6 address, with an optional numeric port.
/// - Every path component is lowercase letters and digits, separated by one `.`, one or two
///   `_`, or any number of `-` (so it cannot start or end with a separator: `app-` is refused).
/// - A tag is up to 128 letters, digits, `_`, `.` and `-`, not starting with `.` or `-`
///   (`app:-x` is refused).
/// - A digest is `sha256`, `sha384` or `sha512` with its lowercase hex of the right length.
/// - The normalized repository name is at most 255 characters, and a bare 64-hex string is
///   refused (it would be taken for an image id).
pub fn validate_image_reference(reference: &str) -> Result<(), String> {
    let invalid = |why: String| Err(format!("{reference:?} is not a valid image reference: {why}"));
    if reference.is_empty() {
        return Err("must not be empty".into());
    }
    if reference.len() == 64 && reference.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return invalid("a repository name cannot be a 64-character hexadecimal string".into());
    }
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest
        && let Err(why) = check_digest(digest)
    {
        return invalid(why);
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if let Some(tag) = tag
        && !is_tag(tag)
    {
        return invalid(format!(
            "tag {tag:?} must be 1-{MAX_TAG} letters, digits, '_', '.' or '-', not starting with '.' or '-'"
        ));
    }
    let (host, path) = split_host(repository);
    if let Some(host) = host
        && !is_host(host)
    {
        return invalid(format!("registry host {host:?} is not a host name or address with an optional port"));
    }
    for component in path.split('/') {
        if component.bytes().any(|b| b.is_ascii_uppercase()) {
            return invalid("the repository name must be lowercase".into());
        }
        if !is_path_component(component) {
            return invalid(format!(
                "path component {component:?} must be lowercase letters and digits, separated by '.', '_', '__' or '-'"
            ));
        }
    }
    let normalized_len = match host {
        Some(host) => host.len() + 1 + path.len(),
        None if path.contains('/') => "docker.io/".len() + path.len(),
        None => "docker.io/library/".len() + path.len(),
    };
    if normalized_len > MAX_REPOSITORY_NAME {
        return invalid(format!("the repository name is longer than {MAX_REPOSITORY_NAME} characters"));
    }
    Ok(())
}

/// Docker's split of a repository into registry host and path: the first component is a host
/// if it looks like one (a `.` or `:`, `localhost`) or is not lowercase.
fn split_host(repository: &str) -> (Option<&str>, &str) {
    match repository.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':']) || first == "localhost" || first.bytes().any(|b| b.is_ascii_uppercase()) =>
        {
            (Some(first), rest)
        }
        _ => (None, repository),
    }
}

/// `[a-z0-9]+ (separator [a-z0-9]+)*`, separator one of `.`, `_`, `__`, `-+`.
fn is_path_component(component: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    if bytes.is_empty() || !alnum(&bytes[0]) || !alnum(&bytes[bytes.len() - 1]) {
        return false;
    }
    // Every run of non-alphanumerics between alphanumerics must be one separator.
    bytes
        .split(alnum)
        .filter(|run| !run.is_empty())
        .all(|run| matches!(run, b"." | b"_" | b"__") || run.iter().all(|b| *b == b'-'))
}

/// `host[:port]`: DNS labels (letters, digits, inner `-`) joined by `.`, or `[ipv6]`.
fn is_host(host: &str) -> bool {
    let (address, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((ipv6, after)) = rest.split_once(']') else { return false };
        if ipv6.is_empty() || !ipv6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        match after {
            "" => return true,
            _ => (None, after.strip_prefix(':').unwrap_or("x")),
        }
    } else {
        match host.split_once(':') {
            Some((address, port)) => (Some(address), port),
            None => (Some(host), "0"),
        }
    };
    let label = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    address.is_none_or(|a| a.split('.').all(label)) && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
}

fn is_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_TAG
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

/// `algorithm:hex` with an algorithm Docker can verify.
fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!("digest {digest:?} must be algorithm:hex"));
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        other => return Err(format!("digest algorithm {other:?} is not supported (sha256, sha384, sha512)")),
    };
    if hex.len() != length || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(format!("a {algorithm} digest is {length} lowercase hexadecimal digits"));
    }
    Ok(())
}

/// Docker's container name rule: `[a-zA-Z0-9][a-zA-Z0-9_.-]+`, so at least two characters
/// (Docker refuses `a` with the same 400 as `-a`). What admission requires.
pub fn is_container_name(name: &str) -> bool {
    name.len() >= 2 && is_runtime_name(name)
}

/// The characters of Docker's container name rule, `[a-zA-Z0-9][a-zA-Z0-9_.-]*`, without its
/// length: a one-character name passes this and is refused by Docker. Prefer
/// [`is_container_name`]; this stays for the simulated runtime, which still accepts such names.
pub fn is_runtime_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

/// What [`is_container_name`] requires, for messages.
pub const RUNTIME_NAME_RULE: &str = "[a-zA-Z0-9][a-zA-Z0-9_.-]+ (at least two characters)";

/// The canonical form of an image reference, as Docker resolves it: `busybox`,
/// `busybox:latest` and `docker.io/library/busybox:latest` all become
/// `docker.io/library/busybox:latest`. A digest reference keeps its digest and drops no tag.
pub fn normalize_image_reference(reference: &str) -> String {
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => (first, rest),
        _ => ("docker.io", name),
    };
    let registry = if registry == "index.docker.io" { "docker.io" } else { registry };
    let path =
        if registry == "docker.io" && !path.contains('/') { format!("library/{path}") } else { path.to_string() };
    let mut full = format!("{registry}/{path}");
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && digest.is_none() {
        full.push_str(":latest");
    }
    if let Some(digest) = digest {
        full.push('@');
        full.push_str(digest);
    }
    full
}

/// The short form Docker shows in `RepoTags`: `busybox:latest`, `drydock-test/busybox:latest`,
/// `quay.io/a/b:1`.
pub fn familiar_image_reference(reference: &str) -> String {
    let full = normalize_image_reference(reference);
    full.strip_prefix("docker.io/library/")
        .or_else(|| full.strip_prefix("docker.io/"))
        .map_or_else(|| full.clone(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::normalize_image_reference as n;
    use super::validate_image_reference;

    /// Accepted and refused as `docker pull` / `docker create` accept and refuse them.
    #[test]
    fn image_references_by_dockers_grammar() {
        let sha = "0".repeat(64);
        let long_path = "a".repeat(238); // 238 + "docker.io/library/" = 256
        for ok in [
            "busybox",
            "busybox:latest",
            "docker.io/library/busybox:1.36",
            "localhost:5000/a/b:c",
            "localhost/app",
            "127.0.0.1:5487/drydock-test/busybox",
            "[::1]:5000/app",
            "[fe80::1]/app:v1",
            "my-registry.example.com/team/app",
            "a__b",
            "a---b",
            "a.b_c-d",
            "app:_x",
            "app:V1.2-rc_3",
            "Foo/bar", // an uppercase first component is a host, as Docker parses it
            &format!("x@sha256:{sha}"),
            &format!("x:1@sha512:{}", "a".repeat(128)),
            &format!("sha256:{sha}"), // an image id: name "sha256", tag the hex
            &"a".repeat(237),
        ] {
            assert_eq!(validate_image_reference(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "BusyBox",
            "ghcr.io/Owner/app",
            "busybox:",
            "a//b",
            "/a",
            "a/",
            "busybox@md5:12",
            "busy box",
            "app-",
            "-app",
            "_app",
            "app:-x",
            "app:.x",
            "a..b",
            "a___b",
            "a_-b",
            "a.-b",
            "exa_mple.com/x",
            "-example.com/x",
            "localhost:port/x",
            "localhost:/x",
            "[::1/x",
            "[zz]/x",
            &sha,
            &format!("x@sha256:{}", sha.to_uppercase().replace('0', "A")),
            &format!("x@sha256:{}", &sha[1..]),
            &format!("x@sha384:{sha}"),
            &format!("x:{}", "t".repeat(129)),
            &long_path,
        ] {
            assert!(validate_image_reference(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn container_names_by_dockers_rule() {
        use super::{is_container_name, is_runtime_name};
        for ok in ["ab", "a1", "9z", "web.1", "my_app-2", "A.b"] {
            assert!(is_container_name(ok), "{ok}");
        }
        for bad in ["", "a", "-ab", ".ab", "_ab", "a b", "a/b", "a:b", "é1"] {
            assert!(!is_container_name(bad), "{bad}");
        }
        assert!(is_runtime_name("a"), "the characters only");
    }

    #[test]
    fn one_key_per_image() {
        assert_eq!(n("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(n("busybox:latest"), n("docker.io/library/busybox:latest"));
        assert_eq!(n("library/busybox"), n("busybox"));
        assert_eq!(n("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(n("quay.io/a/b:1"), "quay.io/a/b:1");
        let d = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(n(&format!("busybox@{d}")), format!("docker.io/library/busybox@{d}"));
        assert_ne!(n(&format!("busybox@{d}")), n("busybox"));
    }

    /// Docker's documented rules: the default registry is docker.io, single-component names live
    /// under library/, a missing tag means latest, a first component with a dot, a colon or
    /// `localhost` is a registry host, and a digest names content on its own.
    #[test]
    fn normalization_table() {
        let d = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let table: &[(&str, String)] = &[
            ("busybox", "docker.io/library/busybox:latest".into()),
            ("busybox:1.36", "docker.io/library/busybox:1.36".into()),
            ("library/busybox", "docker.io/library/busybox:latest".into()),
            ("docker.io/busybox", "docker.io/library/busybox:latest".into()),
            ("docker.io/library/busybox:latest", "docker.io/library/busybox:latest".into()),
            ("bitnami/redis", "docker.io/bitnami/redis:latest".into()),
            ("localhost/app", "localhost/app:latest".into()),
            ("localhost:5000/app:v1", "localhost:5000/app:v1".into()),
            ("127.0.0.1:5487/drydock-test/busybox", "127.0.0.1:5487/drydock-test/busybox:latest".into()),
            ("ghcr.io/owner/image", "ghcr.io/owner/image:latest".into()),
            (&*Box::leak(format!("busybox@{d}").into_boxed_str()), format!("docker.io/library/busybox@{d}")),
            (&*Box::leak(format!("busybox:1.36@{d}").into_boxed_str()), format!("docker.io/library/busybox:1.36@{d}")),
        ];
        for (input, want) in table {
            assert_eq!(&n(input), want, "{input}");
        }
    }

    #[test]
    fn familiar_forms() {
        use super::familiar_image_reference as f;
        assert_eq!(f("docker.io/library/busybox"), "busybox:latest");
        assert_eq!(f("drydock-test/busybox"), "drydock-test/busybox:latest");
        assert_eq!(f("quay.io/a/b:1"), "quay.io/a/b:1");
    }
}
