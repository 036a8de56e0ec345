//! The names the container runtime parses: image references (their grammar, the normalized form
//! that makes `nginx`, `nginx:latest` and `docker.io/library/nginx:latest` one image, and the
//! familiar form Docker shows) and container names.

/// A Docker image reference: `[registry/]path[:tag][@sha256:digest]`, lowercase path.
pub fn validate_image_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err("must not be empty".into());
    }
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:").ok_or("digest must start with sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{digest:?} is not a sha256 digest"));
        }
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if let Some(tag) = tag
        && (tag.is_empty() || tag.len() > 128 || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)))
    {
        return Err(format!("tag {tag:?} is not valid"));
    }
    let components: Vec<&str> = path.split('/').collect();
    for (i, component) in components.iter().enumerate() {
        let is_registry = i == 0 && components.len() > 1 && (component.contains('.') || component.contains(':'));
        let ok = if is_registry {
            !component.is_empty()
        } else {
            !component.is_empty()
                && component.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && component.as_bytes()[0].is_ascii_alphanumeric()
        };
        if !ok {
            return Err(format!("{reference:?} is not a valid image reference (path component {component:?})"));
        }
    }
    Ok(())
}

/// Docker's container name rule.
pub fn is_runtime_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

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

    #[test]
    fn image_references() {
        for ok in [
            "busybox",
            "busybox:latest",
            "docker.io/library/busybox:1.36",
            "localhost:5000/a/b:c",
            "x@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert_eq!(validate_image_reference(ok), Ok(()), "{ok}");
        }
        for bad in ["", "BusyBox", "busybox:", "a//b", "busybox@md5:12", "busy box"] {
            assert!(validate_image_reference(bad).is_err(), "{bad}");
        }
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
