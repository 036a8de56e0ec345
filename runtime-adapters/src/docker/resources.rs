//! Networks, volumes, image builds and copied files over Docker's API (20.10, API 1.41), as the
//! runtime contract describes them; each answer observed on the daemon and pinned by the
//! conformance suite:
//!
//! | request | Docker answers | contract |
//! | --- | --- | --- |
//! | network create | 409 name taken (drydock always sends `CheckDuplicate`, which bollard's model lacks: it is added to the body) | `Conflict` |
//! | network create, remove | 403 for `bridge`, `host`, `none` | `Invalid` |
//! | network remove | 403 "... has active endpoints" (a running container attached) | `Conflict` |
//! | network inspect, remove | 400 "... is ambiguous" (two networks of one name, made by someone else) | `Invalid` |
//! | network connect | 403 "endpoint with name c already exists in network n" (a running container, again) | `Conflict` |
//! | network disconnect | 500 "container ID is not connected to (the) network n" | `NotFound`: what was to be detached is not there |
//! | volume create | 201 with the existing volume, its labels unchanged, for a name taken | `Volume` |
//! | build | 200 with an error in its stream (a step failed, a base image that cannot be pulled), 400 (a Dockerfile that does not parse, an unknown target), 500 "Cannot locate specified Dockerfile", 500 "invalid reference format" | `Invalid` |
//! | build | (the docker CLI, before sending) "error checking context: syntax error in pattern", "error checking context: illegal exclusion pattern: \"!\"" for a `.dockerignore` it cannot use | `Invalid` |
//! | archive upload | 404 no such container | `NotFound` |
//! | archive upload | 500 "Error processing tar file(exit status 1): open PATH: read-only file system" (under a read-only mount), "...: not a directory" (below a file); the files before it written | `Invalid` |
//!
//! A network list carries no containers in Docker's answer: each listed network is inspected
//! for them (a label-filtered list is short). Lists are sorted by name (then id), as the
//! simulated runtime answers them.
//!
//! A build sends the context directory as a tar (`tar` crate, ownership and times left out as
//! the docker CLI does), asks the classic builder (`version=1`) to remove intermediate
//! containers even when a step fails (`forcerm`), and reports the stream's texts line by line.
//! A context directory or Dockerfile that does not exist is refused before anything is sent,
//! with the docker CLI's and the daemon's wording.
//!
//! The tar leaves out what the context's `.dockerignore` excludes, as the docker CLI's does
//! (secrets, `.env`, `target/` must not reach the daemon, let alone the image): the walk asks
//! the contract's [`ContextFilter`] (`drydock_engine::runtime::dockerignore`, which the
//! simulated runtime's builds obey too) whether to send each entry and whether to enter each
//! directory; it never follows a symbolic link, and goes in name order so that one directory
//! always makes one archive. The Dockerfile and `.dockerignore` are sent even when listed (the
//! daemon needs them); the classic builder then removes them from the context itself when the
//! `.dockerignore` lists them, so a `COPY .` does not copy them.

use super::{DockerRuntime, map_error};
use crate::runtime::ProgressSink;
use bollard::errors::Error as BollardError;
use bollard::models::{
    EndpointSettings, NetworkConnectRequest, NetworkCreateRequest, NetworkDisconnectRequest, VolumeCreateRequest,
};
use bollard::query_parameters::{
    BuildImageOptions, BuilderVersion, ListNetworksOptions, ListVolumesOptions, UploadToContainerOptions,
};
use drydock_engine::api::container::CopiedFile;
use drydock_engine::runtime::dockerignore::{ContextFilter, DOCKERIGNORE};
use drydock_engine::runtime::{
    ImageBuild, NetworkCreate, NetworkInfo, RuntimeError, RuntimeReply, RuntimeResult, VolumeCreate, VolumeInfo,
};
use futures_util::StreamExt;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

impl DockerRuntime {
    /// `POST /networks/create` with `CheckDuplicate: true`: bollard's request model (newer API
    /// versions dropped the field) cannot carry it, so the body is replaced on its way out.
    pub(super) async fn create_network(&self, create: NetworkCreate) -> RuntimeResult {
        let body = serde_json::json!({
            "Name": create.name,
            "CheckDuplicate": true,
            "Labels": create.labels,
        })
        .to_string();
        let docker = self.docker.clone().with_request_modifier(move |request| {
            if request.uri().path().ends_with("/networks/create") {
                request.map(|_| bollard::body_full(bytes::Bytes::from(body.clone())))
            } else {
                request
            }
        });
        let request = NetworkCreateRequest {
            name: create.name.clone(),
            labels: Some(create.labels.into_iter().collect()),
            ..Default::default()
        };
        let created = docker.create_network(request).await.map_err(map_error)?;
        Ok(RuntimeReply::Created { id: created.id })
    }

    pub(super) async fn inspect_network(&self, id: &str) -> Result<NetworkInfo, RuntimeError> {
        let network = self.docker.inspect_network(id, None).await.map_err(map_error)?;
        let mut containers: Vec<String> = network.containers.unwrap_or_default().into_keys().collect();
        containers.sort();
        Ok(NetworkInfo {
            id: network.id.unwrap_or_default(),
            name: network.name.unwrap_or_default(),
            labels: network.labels.unwrap_or_default().into_iter().collect(),
            containers,
        })
    }

    pub(super) async fn list_networks(&self, labels: BTreeMap<String, String>) -> RuntimeResult {
        let options = ListNetworksOptions { filters: label_filters(&labels) };
        let listed = self.docker.list_networks(Some(options)).await.map_err(map_error)?;
        let mut networks = Vec::with_capacity(listed.len());
        for id in listed.into_iter().filter_map(|n| n.id) {
            match self.inspect_network(&id).await {
                Ok(info) => networks.push(info),
                Err(RuntimeError::NotFound(_)) => {} // removed since the list
                Err(e) => return Err(e),
            }
        }
        networks.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        Ok(RuntimeReply::Networks(networks))
    }

    pub(super) async fn connect_network(&self, network: &str, container: &str, aliases: Vec<String>) -> RuntimeResult {
        let request = NetworkConnectRequest {
            container: container.to_string(),
            endpoint_config: Some(EndpointSettings {
                aliases: (!aliases.is_empty()).then_some(aliases),
                ..Default::default()
            }),
        };
        self.docker.connect_network(network, request).await.map_err(map_error)?;
        Ok(RuntimeReply::Done)
    }

    pub(super) async fn disconnect_network(&self, network: &str, container: &str) -> RuntimeResult {
        let request = NetworkDisconnectRequest { container: container.to_string(), force: Some(false) };
        self.docker.disconnect_network(network, request).await.map_err(map_error)?;
        Ok(RuntimeReply::Done)
    }

    pub(super) async fn create_volume(&self, create: VolumeCreate) -> RuntimeResult {
        let request = VolumeCreateRequest {
            name: Some(create.name),
            labels: Some(create.labels.into_iter().collect()),
            ..Default::default()
        };
        let volume = self.docker.create_volume(request).await.map_err(map_error)?;
        Ok(RuntimeReply::Volume(VolumeInfo { name: volume.name, labels: volume.labels.into_iter().collect() }))
    }

    pub(super) async fn inspect_volume(&self, name: &str) -> RuntimeResult {
        let volume = self.docker.inspect_volume(name).await.map_err(map_error)?;
        Ok(RuntimeReply::Volume(VolumeInfo { name: volume.name, labels: volume.labels.into_iter().collect() }))
    }

    pub(super) async fn list_volumes(&self, labels: BTreeMap<String, String>) -> RuntimeResult {
        let options = ListVolumesOptions { filters: label_filters(&labels) };
        let listed = self.docker.list_volumes(Some(options)).await.map_err(map_error)?;
        let mut volumes: Vec<VolumeInfo> = listed
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| VolumeInfo { name: v.name, labels: v.labels.into_iter().collect() })
            .collect();
        volumes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(RuntimeReply::Volumes(volumes))
    }

    pub(super) async fn remove_volume(&self, name: &str) -> RuntimeResult {
        self.docker
            .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>)
            .await
            .map_err(map_error)?;
        Ok(RuntimeReply::Done)
    }

    /// `POST /build` of the context directory (see the module doc); each line of the builder's
    /// output goes to `progress` as it comes.
    pub(super) async fn build(&self, build: ImageBuild, progress: Option<&ProgressSink>) -> RuntimeResult {
        let context = Path::new(&build.context);
        if !context.is_dir() {
            return Err(RuntimeError::Invalid(format!(
                "unable to prepare context: path {:?} not found",
                build.context
            )));
        }
        let dockerfile = if build.dockerfile.is_empty() { "Dockerfile".to_string() } else { build.dockerfile.clone() };
        if !context.join(&dockerfile).is_file() {
            return Err(RuntimeError::Invalid(format!("Cannot locate specified Dockerfile: {dockerfile}")));
        }
        let dir = context.to_path_buf();
        let named = dockerfile.clone();
        let archive = tokio::task::spawn_blocking(move || context_tar(&dir, &named))
            .await
            .map_err(|e| RuntimeError::Transient(format!("archiving the build context failed: {e}")))??;
        let options = BuildImageOptions {
            dockerfile,
            t: Some(build.tag.clone()),
            rm: true,
            forcerm: true,
            buildargs: Some(build.build_args.into_iter().collect()),
            labels: Some(build.labels.into_iter().collect()),
            target: build.target.unwrap_or_default(),
            version: BuilderVersion::BuilderV1,
            ..Default::default()
        };
        let mut stream = self.docker.build_image(options, None, Some(bollard::body_full(archive.into())));
        let mut lines = Vec::new();
        while let Some(message) = stream.next().await {
            let info = message.map_err(map_build_error)?;
            if let Some(error) = info.error_detail.and_then(|d| d.message) {
                return Err(RuntimeError::Invalid(error));
            }
            for line in info.stream.as_deref().unwrap_or_default().lines() {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if let Some(sink) = progress {
                    sink(line);
                }
                lines.push(line.to_string());
            }
        }
        Ok(RuntimeReply::Built { progress: lines })
    }

    /// `PUT /containers/{id}/archive?path=/` of a tar holding each file at its destination,
    /// with its mode and numeric owner; Docker makes the missing parent directories.
    pub(super) async fn copy_files(&self, id: &str, files: Vec<CopiedFile>) -> RuntimeResult {
        let archive = files_archive(&files, crate::clock::wall_now().0 / 1000)
            .map_err(|e| RuntimeError::Invalid(format!("cannot archive the files to copy: {e}")))?;
        let options = UploadToContainerOptions { path: "/".into(), ..Default::default() };
        self.docker
            .upload_to_container(id, Some(options), bollard::body_full(archive.into()))
            .await
            .map_err(map_error)?;
        Ok(RuntimeReply::Done)
    }
}

/// `{"label": ["k=v", ...]}`, or no filter at all for no labels.
fn label_filters(labels: &BTreeMap<String, String>) -> Option<HashMap<String, Vec<String>>> {
    (!labels.is_empty())
        .then(|| HashMap::from([("label".to_string(), labels.iter().map(|(k, v)| format!("{k}={v}")).collect())]))
}

/// A build's error, from the response or from inside its stream: the builder's message is
/// `Invalid` (the same inputs fail the same way); a connection that broke is still `Uncertain`.
fn map_build_error(error: BollardError) -> RuntimeError {
    match error {
        BollardError::DockerStreamError { error } => RuntimeError::Invalid(error),
        BollardError::DockerResponseServerError { status_code: 500, message }
            if message.starts_with("Cannot locate specified Dockerfile") =>
        {
            RuntimeError::Invalid(message)
        }
        other => map_error(other),
    }
}

/// What a build of context directory `dir` with the Dockerfile at `dockerfile` (relative to it)
/// sends: the tar of the context its `.dockerignore` (if any) lets through. A `.dockerignore`
/// that cannot be used is refused with the docker CLI's message; a file that cannot be read
/// fails the build.
fn context_tar(dir: &Path, dockerfile: &str) -> Result<Vec<u8>, RuntimeError> {
    let unreadable =
        |e: std::io::Error| RuntimeError::Invalid(format!("cannot read the build context {}: {e}", dir.display()));
    // Read as bytes: a comment in another encoding must not fail the build (Go reads bytes).
    let dockerignore = match std::fs::read(dir.join(DOCKERIGNORE)) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(unreadable(e)),
    };
    let filter = ContextFilter::new(dockerignore.as_deref(), dockerfile)
        .map_err(|e| RuntimeError::Invalid(e.context_message()))?;
    context_archive(dir, &filter).map_err(unreadable)
}

/// The context directory as a tar, as the docker CLI sends it: paths relative to the
/// directory, what `filter` leaves out left out, symbolic links as links, no owners or times,
/// entries in name order (see the module doc).
fn context_archive(dir: &Path, filter: &ContextFilter) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    builder.follow_symlinks(false);
    append_entries(&mut builder, dir, Path::new(""), filter)?;
    builder.into_inner()
}

/// Append the entries of directory `dir`, whose path in the archive is `name` (empty for the
/// context's root), that `filter` sends, and those of the directories below it that it enters.
/// The walk only reaches what the directories above were entered for, so an entry is sent
/// exactly when `filter.sends` its path.
fn append_entries(
    builder: &mut tar::Builder<Vec<u8>>,
    dir: &Path,
    name: &Path,
    filter: &ContextFilter,
) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let entry_name = name.join(entry.file_name());
        // Patterns are text; a name that is not UTF-8 is matched by its lossy spelling.
        let matched = entry_name.to_string_lossy().into_owned();
        // Not followed: a link to a directory is a link, as in the docker CLI's walk.
        let is_dir = entry.file_type()?.is_dir();
        if !filter.leaves_out(&matched) {
            builder.append_path_with_name(entry.path(), &entry_name)?;
        }
        if is_dir && filter.enters(&matched) {
            append_entries(builder, &entry.path(), &entry_name, filter)?;
        }
    }
    Ok(())
}

/// A tar of `files`, each at its destination (relative to `/`), with its mode, owner, group
/// and the time `mtime` (seconds since the epoch).
pub(crate) fn files_archive(files: &[CopiedFile], mtime: u64) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(file.contents.len() as u64);
        header.set_mode(file.mode);
        header.set_uid(u64::from(file.owner));
        header.set_gid(u64::from(file.group));
        header.set_mtime(mtime);
        let path = file.destination.trim_start_matches('/');
        builder.append_data(&mut header, path, file.contents.as_bytes())?;
    }
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_archive_holds_each_file_at_its_destination() {
        let files = [
            CopiedFile {
                destination: "/etc/app/conf.txt".into(),
                contents: "a=1\n".into(),
                mode: 0o600,
                owner: 7,
                group: 8,
            },
            CopiedFile {
                destination: format!("/{}/long.txt", "d".repeat(120)),
                contents: String::new(),
                mode: 0o644,
                owner: 0,
                group: 0,
            },
        ];
        let archive = files_archive(&files, 1_700_000_000).expect("archived");
        let mut reader = tar::Archive::new(archive.as_slice());
        let entries: Vec<(String, u32, u64, u64, String)> = reader
            .entries()
            .expect("entries")
            .map(|e| {
                let mut e = e.expect("entry");
                let mut contents = String::new();
                std::io::Read::read_to_string(&mut e, &mut contents).expect("read");
                let h = e.header();
                let path = e.path().expect("path").display().to_string();
                (path, h.mode().expect("mode"), h.uid().expect("uid"), h.gid().expect("gid"), contents)
            })
            .collect();
        assert_eq!(entries[0], ("etc/app/conf.txt".to_string(), 0o600, 7, 8, "a=1\n".to_string()));
        assert_eq!(entries[1].0, format!("{}/long.txt", "d".repeat(120)), "a long path survives");
    }

    #[test]
    fn the_context_tar_leaves_out_what_dockerignore_excludes() {
        let temp = tempfile::tempdir().expect("a temporary directory");
        let dir = temp.path().to_path_buf();
        let files = [
            (".dockerignore", "# out\nsecret.env\n/target/\n!target/keep.txt\n**/*.tmp\nDockerfile\n"),
            ("Dockerfile", "FROM scratch\n"),
            ("kept.txt", "kept"),
            ("secret.env", "SECRET=1"),
            ("target/out.bin", "binary"),
            ("target/keep.txt", "keep"),
            ("src/main.sh", "echo"),
            ("src/cache.tmp", "tmp"),
        ];
        for (path, contents) in files {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
            std::fs::write(&file, contents).expect("write");
        }
        std::os::unix::fs::symlink("/etc", dir.join("src/etc")).expect("symlink");
        let names = |archive: Vec<u8>| -> Vec<String> {
            let mut reader = tar::Archive::new(archive.as_slice());
            let entries = reader.entries().expect("entries");
            entries.map(|e| e.expect("entry").path().expect("path").display().to_string()).collect()
        };
        let sent = names(context_tar(&dir, "Dockerfile").expect("archived"));
        assert_eq!(
            sent,
            [".dockerignore", "Dockerfile", "kept.txt", "src", "src/etc", "src/main.sh", "target/keep.txt"],
            "the Dockerfile though listed, no directory entry for target, the link not followed"
        );
        assert_eq!(names(context_tar(&dir, "Dockerfile").expect("again")).len(), sent.len());
        std::fs::write(dir.join(".dockerignore"), "ok\n!\n").expect("write");
        match context_tar(&dir, "Dockerfile") {
            Err(RuntimeError::Invalid(m)) => assert_eq!(m, "error checking context: illegal exclusion pattern: \"!\""),
            other => panic!("a lone ! is refused: {other:?}"),
        }
        std::fs::remove_file(dir.join(".dockerignore")).expect("remove");
        assert_eq!(names(context_tar(&dir, "Dockerfile").expect("no .dockerignore")).len(), 10, "everything");
    }

    #[test]
    fn build_errors_are_invalid_unless_the_connection_broke() {
        let stream = BollardError::DockerStreamError {
            error: "The command '/bin/sh -c false' returned a non-zero code: 1".into(),
        };
        assert!(matches!(map_build_error(stream), RuntimeError::Invalid(_)));
        let missing = BollardError::DockerResponseServerError {
            status_code: 500,
            message: "Cannot locate specified Dockerfile: nope".into(),
        };
        assert!(matches!(map_build_error(missing), RuntimeError::Invalid(_)));
        assert!(matches!(map_build_error(BollardError::RequestTimeoutError), RuntimeError::Uncertain(_)));
    }
}
