//! Distribution: `docker push` and `docker pull`, the transfers between the registry (see
//! `registry`) and the local image store (see `images`), as Docker 20.10's daemon makes them:
//! a pull fetches the manifest a reference names, stores its image if new, and points the tag
//! (for a tag reference) and the repo digest at it; a push publishes a local image's content and
//! records the repo digest.

use super::SimRuntime;
use super::references::{Selector, check_reference, familiar_reference, reference_key, split_reference, truncate_id};
use super::registry::Content;
use super::sha256_of;
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeResult};

/// The size of the one layer each pulled image has, for the progress lines.
const SIM_LAYER_SIZE: u64 = 1_064_476;

/// What Docker 20.10 says when it cannot reach registry `host`: it speaks plain HTTP to a
/// loopback registry (connection refused when nothing listens) and HTTPS to others (here: no
/// such host).
fn unreachable(host: &str) -> String {
    let hostname = host.rsplit_once(':').map_or(host, |(name, _)| name);
    if hostname == "localhost" || hostname.starts_with("127.") || hostname == "[::1]" {
        let address = if host.contains(':') { host.to_string() } else { format!("{host}:80") };
        format!("Get \"http://{host}/v2/\": dial tcp {address}: connect: connection refused")
    } else {
        format!("Get \"https://{host}/v2/\": dial tcp: lookup {hostname}: no such host")
    }
}

impl SimRuntime {
    /// Publish new content under `reference` in the registry (a `name:tag`; the tag moves if it was
    /// there) and return its manifest digest. A `name@digest` reference publishes untagged content,
    /// reachable only by the returned digest. The local store is untouched.
    pub fn registry_push(&mut self, reference: &str) -> String {
        self.registry.push_new(reference)
    }

    /// `docker tag <image> <reference> && docker push <reference>`: publish a local image's content
    /// under `reference`, tag it locally and record its repo digest. `None` if `image` is absent.
    pub fn registry_push_image(&mut self, image: &str, reference: &str) -> Option<String> {
        let local = self.images.resolve(image)?;
        let content = Content { image_id: local.id.clone(), config: local.config.clone() };
        let id = content.image_id.clone();
        let digest = self.registry.publish(reference, content);
        let (name, selector) = split_reference(reference);
        if let Selector::Tag(tag) = selector {
            self.images.set_ref(&format!("{name}:{tag}"), &id);
        }
        self.images.set_ref(&format!("{name}@{digest}"), &id);
        Some(digest)
    }

    /// Publish the content `existing` refers to in the registry under `reference` as well (a tag
    /// moving to content the registry already has, as `crane tag` does). `None` if `existing` is
    /// not in the registry.
    pub fn registry_tag(&mut self, existing: &str, reference: &str) -> Option<String> {
        let (_, content) = self.registry.lookup(existing)?;
        let content = content.clone();
        Some(self.registry.publish(reference, content))
    }

    /// What `reference` names in the registry: its manifest digest and the id its image has once
    /// pulled.
    pub fn registry_lookup(&self, reference: &str) -> Option<(String, String)> {
        let (digest, content) = self.registry.lookup(reference)?;
        Some((digest.clone(), content.image_id.clone()))
    }

    /// Docker's `pullImage`: fetch the manifest the reference names, store its image if new, point
    /// the tag (for a tag reference) and the repo digest at it.
    ///
    /// A reference outside Docker's grammar is refused (400); a registry the daemon cannot reach
    /// fails the pull with the daemon's dial error (a 500), which says nothing about whether the
    /// image exists: a registry host is reachable if anything was ever pushed there, and Docker
    /// Hub (`docker.io`) always is.
    pub(super) fn pull(&mut self, reference: &str) -> RuntimeResult {
        check_reference(reference)?;
        let (name, selector) = split_reference(reference);
        let familiar = familiar_reference(reference).unwrap_or_else(|| reference.to_string());
        let host = name.split_once('/').map_or("", |(host, _)| host);
        if host != "docker.io" && !self.registry.has_host(host) {
            return Err(RuntimeError::Transient(format!("500: {}", unreachable(host))));
        }
        let Some((digest, content)) = self.registry.lookup(reference) else {
            let known = self.registry.has_repository(&name);
            return Err(RuntimeError::NotFound(match name.strip_prefix("docker.io/") {
                Some(_) if !known => format!(
                    "pull access denied for {}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
                    familiar_name(&name)
                ),
                _ => format!("manifest for {familiar} not found: manifest unknown: manifest unknown"),
            }));
        };
        let (digest, image_id) = (digest.clone(), content.image_id.clone());
        let path = name.split_once('/').map_or(name.as_str(), |(_, path)| path);
        let shown = match &selector {
            Selector::Tag(tag) => tag.clone(),
            Selector::Digest(_) => reference_key(reference),
        };
        let mut progress = vec![format!("{shown}: Pulling from {path}")];
        if self.images.add(&image_id, || content.config.clone()) {
            let layer = sha256_of(&[b"layer", image_id.as_bytes()]);
            let layer = truncate_id(&layer).to_string();
            let size = format!("{SIM_LAYER_SIZE}/{SIM_LAYER_SIZE}");
            for status in [
                "Pulling fs layer",
                &format!("Downloading {size}"),
                "Verifying Checksum",
                "Download complete",
                &format!("Extracting {size}"),
                "Pull complete",
            ] {
                progress.push(format!("{layer}: {status}"));
            }
        }
        // "Downloaded newer image" when the reference asked for moved; the repo digest is recorded
        // either way.
        let by_digest = self.images.set_ref(&format!("{name}@{digest}"), &image_id);
        let updated = match &selector {
            Selector::Tag(tag) => self.images.set_ref(&format!("{name}:{tag}"), &image_id),
            Selector::Digest(_) => by_digest,
        };
        self.counters.pulled();
        // Docker logs a pull that succeeds, up to date or not (`daemon/images/image_pull.go`).
        self.other_events("image pull", 1);
        progress.push(format!("Digest: {digest}"));
        progress.push(if updated {
            format!("Status: Downloaded newer image for {familiar}")
        } else {
            format!("Status: Image is up to date for {familiar}")
        });
        Ok(RuntimeReply::Pulled { progress })
    }
}

/// A normalized repository name in Docker's short form: `busybox`, `drydock-test/busybox`.
fn familiar_name(name: &str) -> String {
    name.strip_prefix("docker.io/library/").or_else(|| name.strip_prefix("docker.io/")).unwrap_or(name).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{image, is_sha256, pull};
    use super::*;

    #[test]
    fn registry_digests_are_deterministic_and_distinct_from_ids() {
        let digests = |seed| {
            let mut rt = SimRuntime::new(seed);
            let a = rt.registry_push("busybox");
            let b = rt.registry_push("busybox");
            let (_, id) = rt.registry_lookup("busybox").expect("pushed");
            (a, b, id)
        };
        let (a, b, id) = digests(1);
        assert!(is_sha256(&a) && is_sha256(&b) && is_sha256(&id));
        assert_ne!(a, b, "pushing a tag again publishes new content");
        assert_ne!(b, id, "the manifest digest is not the image id");
        assert_eq!(digests(1), (a.clone(), b, id), "same seed, same digests");
        assert_ne!(digests(2).0, a, "another seed, other digests");
    }

    const REG: &str = "127.0.0.1:5000/team/app";

    #[test]
    fn pull_stores_the_registry_content_under_its_tag_and_digest() {
        let mut rt = SimRuntime::new(1);
        let digest = rt.registry_push("busybox");
        let (_, id) = rt.registry_lookup("docker.io/library/busybox:latest").expect("normalized lookup");
        assert!(!rt.has_image("busybox"), "pushing does not make it local");
        let progress = pull(&mut rt, "busybox").expect("pull");
        assert_eq!(progress.first().map(String::as_str), Some("latest: Pulling from library/busybox"));
        assert!(progress.contains(&format!("Digest: {digest}")), "{progress:?}");
        assert_eq!(progress.last().map(String::as_str), Some("Status: Downloaded newer image for busybox:latest"));
        assert_eq!(rt.pulls(), 1);
        for reference in ["busybox", "busybox:latest", "docker.io/library/busybox:latest", &format!("busybox@{digest}")]
        {
            let info = image(&mut rt, reference).unwrap_or_else(|e| panic!("{reference}: {e}"));
            assert_eq!(info.id, id, "{reference}");
            assert_eq!(info.tags, vec!["busybox:latest".to_string()]);
        }
        let again = pull(&mut rt, "docker.io/library/busybox").expect("pull again");
        assert_eq!(again.last().map(String::as_str), Some("Status: Image is up to date for busybox:latest"));
        assert!(!again.iter().any(|l| l.contains("Pull complete")), "nothing downloaded: {again:?}");
        assert_eq!(rt.pulls(), 2);
    }

    #[test]
    fn pull_of_an_unknown_reference_is_not_found() {
        let mut rt = SimRuntime::new(1);
        rt.registry_push(&format!("{REG}:1"));
        let cases = [
            (format!("{REG}:2"), "manifest unknown"),
            ("127.0.0.1:5000/team/other:1".to_string(), "manifest unknown"),
            (format!("{REG}@sha256:{}", "1".repeat(64)), "manifest unknown"),
            ("nosuchimage".to_string(), "pull access denied for nosuchimage"),
        ];
        for (reference, message) in cases {
            match pull(&mut rt, &reference) {
                Err(RuntimeError::NotFound(m)) => assert!(m.contains(message), "{reference}: {m}"),
                other => panic!("{reference}: {other:?}"),
            }
        }
        rt.add_image("imported");
        assert!(
            matches!(pull(&mut rt, "imported"), Err(RuntimeError::NotFound(_))),
            "imported images have no registry"
        );
        assert_eq!(rt.pulls(), 0);
    }

    #[test]
    fn pull_from_an_unreachable_registry_or_of_an_invalid_reference() {
        let mut rt = SimRuntime::new(1);
        rt.registry_push(&format!("{REG}:1"));
        let cases = [
            (
                "127.0.0.1:1/team/app:1",
                RuntimeError::Transient(
                    "500: Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused".into(),
                ),
            ),
            (
                "registry.invalid/app:1",
                RuntimeError::Transient(
                    "500: Get \"https://registry.invalid/v2/\": dial tcp: lookup registry.invalid: no such host".into(),
                ),
            ),
            ("app-", RuntimeError::Invalid("invalid reference format".into())),
            ("app:-x", RuntimeError::Invalid("invalid reference format".into())),
        ];
        for (reference, error) in cases {
            assert_eq!(pull(&mut rt, reference), Err(error), "{reference}");
        }
        assert_eq!(
            image(&mut rt, "app-"),
            Err(RuntimeError::Invalid("no such image: app-: invalid reference format".into()))
        );
        assert_eq!(rt.pulls(), 0);
    }

    #[test]
    fn pull_by_digest_records_the_digest_and_no_tag() {
        let mut rt = SimRuntime::new(1);
        let digest = rt.registry_push(&format!("{REG}:1"));
        let by_digest = format!("{REG}@{digest}");
        let progress = pull(&mut rt, &by_digest).expect("pull");
        assert_eq!(progress[0], format!("{by_digest}: Pulling from team/app"));
        assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {by_digest}")));
        let info = image(&mut rt, &by_digest).expect("by digest");
        assert!(info.tags.is_empty(), "{:?}", info.tags);
        assert!(matches!(image(&mut rt, &format!("{REG}:1")), Err(RuntimeError::NotFound(_))), "not tagged");
        let again = pull(&mut rt, &by_digest).expect("again");
        assert_eq!(again.last(), Some(&format!("Status: Image is up to date for {by_digest}")));
        pull(&mut rt, &format!("{REG}:1")).expect("by tag");
        assert_eq!(image(&mut rt, &format!("{REG}:1")).expect("tagged now").id, info.id);
    }

    #[test]
    fn a_moved_tag_repoints_the_local_tag_and_leaves_the_old_image() {
        let mut rt = SimRuntime::new(1);
        let tag = format!("{REG}:1");
        let first = rt.registry_push(&tag);
        pull(&mut rt, &tag).expect("first pull");
        let old = image(&mut rt, &tag).expect("old").id;
        let second = rt.registry_push(&tag);
        assert_ne!(first, second);
        assert_eq!(image(&mut rt, &tag).expect("still old locally").id, old, "the local tag moves only on pull");
        let progress = pull(&mut rt, &tag).expect("second pull");
        assert_eq!(progress.last(), Some(&format!("Status: Downloaded newer image for {tag}")));
        let new = image(&mut rt, &tag).expect("new");
        assert_ne!(new.id, old);
        assert_eq!(new.tags, vec![tag.clone()]);
        let old_info = image(&mut rt, &old).expect("old by id");
        assert!(old_info.tags.is_empty(), "{:?}", old_info.tags);
        assert_eq!(image(&mut rt, &format!("{REG}@{first}")).expect("old by digest").id, old);
        assert_eq!(image(&mut rt, &format!("{REG}@{second}")).expect("new by digest").id, new.id);
    }

    #[test]
    fn pushing_a_local_image_keeps_its_id_and_tags_it() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("drydock-test/busybox");
        let id = image(&mut rt, "drydock-test/busybox").expect("local").id;
        let remote = "127.0.0.1:5000/drydock-test/busybox:latest";
        let digest = rt.registry_push_image("drydock-test/busybox", remote).expect("pushed");
        assert_eq!(rt.registry_lookup(remote), Some((digest.clone(), id.clone())));
        let info = image(&mut rt, remote).expect("tagged locally");
        assert_eq!((info.id.as_str(), info.tags.len()), (id.as_str(), 2));
        let progress = pull(&mut rt, remote).expect("pull");
        assert_eq!(progress.last(), Some(&format!("Status: Image is up to date for {remote}")));
        assert_eq!(rt.registry_push_image("absent", remote), None);
        let other = "127.0.0.1:5000/drydock-test/copy:1";
        assert_eq!(rt.registry_tag(remote, other), Some(digest), "same content, same manifest");
    }
}
