//! Files in containers: what a container's processes can read, and copying files in, as Docker
//! 20.10's archive upload (`PUT /containers/{id}/archive`, what `docker cp` does) does it:
//!
//! - the container may be created, running or stopped; a missing one is 404 "No such
//!   container: ID";
//! - each file lands at its absolute destination, replacing a file there, its missing parent
//!   directories made;
//! - the archive is extracted in order and stops at the first file that cannot be written, whose
//!   error is the answer (500 `Error processing tar file(exit status 1): open PATH: ...`, which
//!   the adapter reports `Invalid`: the same copy fails the same way): a destination under a
//!   read-only mount (`read-only file system`) or below a file (`not a directory`); the files
//!   before it stay written;
//! - a container's files start as its image's (what its build copied in) and outlive its runs;
//! - the extraction writes through the container's mounts: a file under a named volume's mount
//!   point lands in the volume, where every container mounting it reads it (seen on Docker
//!   20.10.24, for a created container);
//! - a file at a mount point itself cannot replace it: the extraction first removes what is
//!   there, the mount's contents (a volume is emptied), then fails at the mount point: 500
//!   `Error processing tar file(exit status 1): unlinkat //data: device or resource busy`
//!   (`Invalid`). On a read-only mount nothing can be removed: the first entry's removal fails
//!   (`unlinkat //data/f: read-only file system`; Docker meets the entries in the directory's
//!   order, the model in name order), or with none the mount point's (`device or resource
//!   busy`);
//! - a file replaces a directory at its destination, with everything below it.
//!
//! Contents are modelled, and of the mode only whether a file of the container's own may be
//! executed (a script run by path: see `shell`); the owner is accepted, not enforced. The
//! files a container's main process writes (`>`, `>>` in the shell model) are written the same
//! way, through its mounts, when the process ends ([`SimRuntime::apply_written`]). A bind mount's host directory is not: what
//! is copied under a bind mount stays the container's. Docker's copy of an image's files into a
//! new volume mounted over them is not either: a container sees its own files and its volumes'
//! together, a volume's file winning.

use super::SimRuntime;
use super::containers::SimContainer;
use super::not_found;
use super::shell::{Fs, clean_path};
use drydock_engine::api::container::{CopiedFile, Mount};
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeResult};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The mount of `mounts` whose target is the deepest to cover absolute clean `path`, and the
/// path below its target (empty: the mount point itself).
fn covering<'m>(mounts: &'m [Mount], path: &str) -> Option<(&'m Mount, String)> {
    mounts
        .iter()
        .filter_map(|m| {
            let target = clean_path(&m.target);
            let below = path.strip_prefix(target.as_str())?;
            (below.is_empty() || below.starts_with('/')).then(|| (m, target.len(), below.trim_start_matches('/')))
        })
        .max_by_key(|(_, depth, _)| *depth)
        .map(|(m, _, below)| (m, below.to_string()))
}

/// Whether mount `m` is a named volume's (a bind mount's source is an absolute host path).
fn is_volume(m: &Mount) -> bool {
    !m.source.starts_with('/')
}

impl SimRuntime {
    pub(super) fn copy_files(&mut self, id_or_name: &str, files: &[CopiedFile]) -> RuntimeResult {
        let id = self.containers.resolve(id_or_name)?;
        self.journal.container(&id);
        let mounts = self.containers.get(&id).map(|c| c.mounts.clone()).ok_or_else(|| not_found(&id))?;
        let refused = |why: String| RuntimeError::Invalid(format!("Error processing tar file(exit status 1): {why}"));
        for file in files {
            let path = clean_path(&format!("/{}", file.destination));
            match covering(&mounts, &path) {
                Some((mount, below)) if below.is_empty() => return Err(refused(self.clear_mount_point(&id, mount))),
                Some((mount, _)) if mount.read_only => {
                    return Err(refused(format!("open {path}: read-only file system")));
                }
                _ => {}
            }
            if self.below_a_file(&id, &mounts, &path) {
                return Err(refused(format!("open {path}: not a directory")));
            }
            self.write_through(&id, &mounts, &path, &file.contents);
            if let Some(container) = self.containers.get_mut(&id)
                && container.files.contains_key(&path)
            {
                match file.mode & 0o111 != 0 {
                    true => container.executables.insert(path),
                    false => container.executables.remove(&path),
                };
            }
        }
        Ok(RuntimeReply::Done)
    }

    /// Write file `path` (absolute, clean) of container `id` through its `mounts`: into the
    /// volume mounted above it, else its own, replacing what is there and anything below it.
    fn write_through(&mut self, id: &str, mounts: &[Mount], path: &str, contents: &str) {
        match covering(mounts, path) {
            Some((mount, below)) if is_volume(mount) => {
                self.volumes.write_file(&mount.source, &below, contents);
            }
            _ => {
                let Some(container) = self.containers.get_mut(id) else { return };
                let dir = format!("{path}/");
                container.files.retain(|p, _| !p.starts_with(&dir));
                container.executables.retain(|p| p != path && !p.starts_with(&dir));
                container.files.insert(path.to_string(), contents.to_string());
            }
        }
    }

    /// Container `id`'s main process ended: the files it wrote are written, through its mounts
    /// (a write under a named volume's mount lands in the volume, as on Docker).
    pub(super) fn apply_written(&mut self, id: &str) {
        let Some(container) = self.containers.get_mut(id) else { return };
        let written = std::mem::take(&mut container.writes_pending);
        let mounts = container.mounts.clone();
        for (path, contents) in written {
            self.write_through(id, &mounts, &path, &contents);
        }
    }

    /// An extraction meets mount point `mount` of container `id`: it removes what is there (the
    /// mount's contents), then fails to remove the mount point. What it says.
    fn clear_mount_point(&mut self, id: &str, mount: &Mount) -> String {
        let target = clean_path(&mount.target);
        if mount.read_only {
            let first = self.file_tree(id).into_keys().find_map(|p| {
                let below = p.strip_prefix(&format!("{target}/"))?;
                Some(below.split('/').next().unwrap_or(below).to_string())
            });
            if let Some(entry) = first {
                return format!("unlinkat /{target}/{entry}: read-only file system");
            }
        } else {
            if is_volume(mount) {
                self.volumes.empty(&mount.source);
            }
            if let Some(container) = self.containers.get_mut(id) {
                let dir = format!("{target}/");
                container.files.retain(|p, _| !p.starts_with(&dir));
            }
        }
        format!("unlinkat /{target}: device or resource busy")
    }

    /// Whether a directory above `path` is a file in container `id` (so it cannot be written).
    fn below_a_file(&self, id: &str, mounts: &[Mount], path: &str) -> bool {
        let Some(container) = self.containers.get(id) else { return false };
        let mut parent = path;
        while let Some((up, _)) = parent.rsplit_once('/') {
            if self.file_at(container, mounts, up).is_some() {
                return true;
            }
            parent = up;
        }
        false
    }

    /// The file at absolute clean `path` as `container`'s processes see it: a volume's under its
    /// mount, else its own.
    fn file_at<'a>(&'a self, container: &'a SimContainer, mounts: &[Mount], path: &str) -> Option<&'a str> {
        let in_volume = match covering(mounts, path) {
            Some((mount, below)) if is_volume(mount) && !below.is_empty() => {
                self.volumes.get(&mount.source).and_then(|v| v.files().get(&below))
            }
            _ => None,
        };
        in_volume.or_else(|| container.files.get(path)).map(String::as_str)
    }

    /// The contents of file `path` in container `id`, if the model knows it.
    pub fn container_file(&self, id: &str, path: &str) -> Option<&str> {
        let id = self.containers.resolve(id).ok()?;
        let container = self.containers.get(&id)?;
        self.file_at(container, &container.mounts, &clean_path(path))
    }

    /// Every file container `id`'s processes can read, by absolute path: its own, and those of
    /// the volumes it mounts under their mount points (a volume's winning).
    fn file_tree(&self, id: &str) -> BTreeMap<String, String> {
        self.container_files(id).into_owned()
    }

    fn container_files(&self, id: &str) -> Cow<'_, BTreeMap<String, String>> {
        let Some(container) = self.containers.get(id) else { return Cow::Owned(BTreeMap::new()) };
        let volumes: Vec<(String, &BTreeMap<String, String>)> = container
            .mounts
            .iter()
            .filter(|m| is_volume(m))
            .filter_map(|m| self.volumes.get(&m.source).map(|v| (clean_path(&m.target), v.files())))
            .filter(|(_, files)| !files.is_empty())
            .collect();
        if volumes.is_empty() {
            return Cow::Borrowed(&container.files);
        }
        let mut all = container.files.clone();
        for (target, files) in volumes {
            all.extend(files.iter().map(|(below, contents)| (format!("{target}/{below}"), contents.clone())));
        }
        Cow::Owned(all)
    }

    /// What container `id`'s processes see of its file system.
    pub(super) fn file_system(&self, id: &str) -> Fs {
        match self.containers.get(id) {
            Some(c) => {
                let mounts = c.mounts.iter().map(|m| (m.target.as_str(), m.read_only));
                let mut fs = Fs::new(mounts, &self.container_files(id), !c.scratch);
                fs.executables = c.executables.iter().filter(|p| c.files.contains_key(*p)).cloned().collect();
                fs
            }
            None => Fs::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{create, id_of};
    use super::*;
    use drydock_engine::WallTime;
    use drydock_engine::api::container::Mount;
    use drydock_engine::runtime::{ContainerCreate, RuntimeRequest};

    fn file(destination: &str, contents: &str) -> CopiedFile {
        CopiedFile { destination: destination.into(), contents: contents.into(), mode: 0o644, owner: 0, group: 0 }
    }

    #[test]
    fn copied_files_are_read_by_cat_and_test() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        let RuntimeRequest::CreateContainer(c) = create("c1", "busybox") else { unreachable!() };
        let script = "cat /etc/app/conf.txt; test -d /etc/app && test -f /etc/app/conf.txt && echo yes; cat /nope";
        let command = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let id = id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate { command, ..c })));
        let copy =
            |rt: &mut SimRuntime, id: &str, files| rt.execute(&RuntimeRequest::CopyFiles { id: id.into(), files });
        assert_eq!(
            copy(&mut rt, "nope", vec![file("/x", "")]),
            Err(RuntimeError::NotFound("No such container: nope".into()))
        );
        copy(&mut rt, &id, vec![file("/etc/app/conf.txt", "old")]).expect("copied");
        copy(&mut rt, &id, vec![file("/etc/app/conf.txt", "line 1\nline 2\n")]).expect("replaced");
        rt.execute(&RuntimeRequest::StartContainer { id: id.clone() }).expect("start");
        crate::test_support::a_moment_later(&mut rt);
        let printed: Vec<String> =
            rt.output(&id).expect("output").printed_by(WallTime(u64::MAX)).iter().map(|l| l.text.clone()).collect();
        assert_eq!(printed, ["line 1", "line 2", "yes", "cat: can't open '/nope': No such file or directory"]);
        assert_eq!(rt.container(&id).and_then(|c| c.exit_code), Some(1), "cat's status");
    }

    #[test]
    fn a_copy_stops_at_a_file_under_a_read_only_mount_or_below_a_file() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        let RuntimeRequest::CreateContainer(c) = create("c1", "busybox") else { unreachable!() };
        let mounts = vec![Mount { source: "vol".into(), target: "/data".into(), read_only: true }];
        let id = id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate { mounts, ..c })));
        let copy = |rt: &mut SimRuntime, files| rt.execute(&RuntimeRequest::CopyFiles { id: id.clone(), files });
        let refused = copy(&mut rt, vec![file("/etc/first", "1"), file("/data/f", "2"), file("/etc/after", "3")]);
        let expected = "Error processing tar file(exit status 1): open /data/f: read-only file system";
        assert_eq!(refused, Err(RuntimeError::Invalid(expected.into())));
        assert_eq!(rt.container_file(&id, "/etc/first"), Some("1"), "written before the refused one");
        assert_eq!(rt.container_file(&id, "/etc/after"), None, "not after it");
        let below = copy(&mut rt, vec![file("/etc/first/x", "4")]);
        let expected = "Error processing tar file(exit status 1): open /etc/first/x: not a directory";
        assert_eq!(below, Err(RuntimeError::Invalid(expected.into())));
        assert_eq!(copy(&mut rt, vec![file("/database", "5")]), Ok(RuntimeReply::Done), "/data is not /database");
    }

    fn with_mounts(rt: &mut SimRuntime, name: &str, mounts: Vec<Mount>, script: &str) -> String {
        let RuntimeRequest::CreateContainer(c) = create(name, "busybox") else { unreachable!() };
        let command = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        id_of(rt.execute(&RuntimeRequest::CreateContainer(ContainerCreate { command, mounts, ..c })))
    }

    fn volume_at(target: &str, read_only: bool) -> Vec<Mount> {
        vec![Mount { source: "vol".into(), target: target.into(), read_only }]
    }

    /// Docker 20.10.24: a copy under a volume's mount point lands in the volume, which another
    /// container mounting it elsewhere reads; a file replaces a directory with what is below it.
    #[test]
    fn a_copy_under_a_volume_mount_lands_in_the_volume() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        let writer = with_mounts(&mut rt, "writer", volume_at("/data", false), "true");
        let reader = with_mounts(&mut rt, "reader", volume_at("/mnt/", true), "cat /mnt/sub/f.txt");
        let copy = |rt: &mut SimRuntime, files| rt.execute(&RuntimeRequest::CopyFiles { id: writer.clone(), files });
        copy(&mut rt, vec![file("/data/sub/f.txt", "in the volume"), file("/etc/own", "mine")]).expect("copied");
        assert_eq!(rt.container_file(&reader, "/mnt/sub/f.txt"), Some("in the volume"), "through the volume");
        assert_eq!(rt.container_file(&reader, "/etc/own"), None, "the writer's own file is its own");
        assert_eq!(rt.container_file(&writer, "/data/sub/f.txt"), Some("in the volume"));
        rt.execute(&RuntimeRequest::StartContainer { id: reader.clone() }).expect("start");
        let printed: Vec<String> =
            rt.output(&reader).expect("output").printed_by(WallTime(u64::MAX)).iter().map(|l| l.text.clone()).collect();
        assert_eq!(printed, ["in the volume"]);
        let below = copy(&mut rt, vec![file("/data/sub/f.txt/x", "no")]);
        let expected = "Error processing tar file(exit status 1): open /data/sub/f.txt/x: not a directory";
        assert_eq!(below, Err(RuntimeError::Invalid(expected.into())), "below a file of the volume");
        copy(&mut rt, vec![file("/data/sub", "a file now")]).expect("replaces the directory");
        assert_eq!(rt.container_file(&reader, "/mnt/sub"), Some("a file now"));
        assert_eq!(rt.container_file(&reader, "/mnt/sub/f.txt"), None, "gone with its directory");
        rt.check().expect("consistent");
    }

    /// Docker 20.10.24: a file at a mount point cannot replace it. The extraction removes the
    /// mount's contents first (a volume is emptied), then fails at the mount point; on a
    /// read-only mount it fails at the first entry, or at the mount point when there is none.
    #[test]
    fn a_copy_onto_a_mount_point_empties_it_and_fails() {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        let writer = with_mounts(&mut rt, "writer", volume_at("/data", false), "true");
        let read_only = with_mounts(&mut rt, "ro", volume_at("/data", true), "true");
        let copy =
            |rt: &mut SimRuntime, id: &str, files| rt.execute(&RuntimeRequest::CopyFiles { id: id.into(), files });
        let refused =
            |why: &str| Err(RuntimeError::Invalid(format!("Error processing tar file(exit status 1): {why}")));
        let busy = refused("unlinkat //data: device or resource busy");
        assert_eq!(copy(&mut rt, &read_only, vec![file("/data", "x")]), busy, "read-only, empty");
        copy(&mut rt, &writer, vec![file("/data/b/f", "1"), file("/data/a", "2")]).expect("copied");
        assert_eq!(
            copy(&mut rt, &read_only, vec![file("/data/", "x")]),
            refused("unlinkat //data/a: read-only file system"),
            "read-only: its first entry cannot go"
        );
        assert_eq!(rt.container_file(&writer, "/data/a"), Some("2"), "nothing removed");
        let refused_copy =
            copy(&mut rt, &writer, vec![file("/etc/first", "1"), file("/data", "x"), file("/etc/after", "3")]);
        assert_eq!(refused_copy, busy);
        assert_eq!(rt.container_file(&writer, "/etc/first"), Some("1"), "written before");
        assert_eq!(rt.container_file(&writer, "/etc/after"), None, "not after");
        assert_eq!(rt.container_file(&read_only, "/data/a"), None, "the volume was emptied");
        assert!(rt.volumes.get("vol").is_some_and(|v| v.files().is_empty()));
        rt.check().expect("consistent");
    }
}
