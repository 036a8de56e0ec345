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
//! - a container's files start as its image's (what its build copied in) and outlive its runs.
//!
//! Only contents are modelled (mode and owner are accepted, not enforced), and only for reading:
//! `cat` and `test` in the shell model (see `shell`).

use super::SimRuntime;
use super::containers::SimContainer;
use super::not_found;
use super::shell::{Fs, clean_path};
use drydock_engine::api::container::CopiedFile;
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeResult};

impl SimRuntime {
    pub(super) fn copy_files(&mut self, id_or_name: &str, files: &[CopiedFile]) -> RuntimeResult {
        let id = self.containers.resolve(id_or_name)?;
        self.journal.container(&id);
        let container = self.containers.get_mut(&id).ok_or_else(|| not_found(&id))?;
        for file in files {
            let path = clean_path(&format!("/{}", file.destination));
            if let Some(why) = unwritable(container, &path) {
                return Err(RuntimeError::Invalid(format!(
                    "Error processing tar file(exit status 1): open {path}: {why}"
                )));
            }
            container.files.insert(path, file.contents.clone());
        }
        Ok(RuntimeReply::Done)
    }

    /// The contents of file `path` in container `id`, if the model knows it.
    pub fn container_file(&self, id: &str, path: &str) -> Option<&str> {
        let id = self.containers.resolve(id).ok()?;
        self.containers.get(&id)?.files.get(&clean_path(path)).map(String::as_str)
    }

    /// What container `id`'s processes see of its file system.
    pub(super) fn file_system(&self, id: &str) -> Fs {
        match self.containers.get(id) {
            Some(c) => Fs::new(c.mounts.iter().map(|m| m.target.as_str()), &c.files, !c.scratch),
            None => Fs::default(),
        }
    }
}

/// Why the archive's extraction cannot write a file at `path`, if it cannot.
fn unwritable(container: &SimContainer, path: &str) -> Option<&'static str> {
    let below = |dir: &str| path == dir || path.starts_with(&format!("{}/", dir.trim_end_matches('/')));
    if container.mounts.iter().any(|m| m.read_only && below(&clean_path(&m.target))) {
        return Some("read-only file system");
    }
    let mut parent = path;
    while let Some((up, _)) = parent.rsplit_once('/') {
        if container.files.contains_key(up) {
            return Some("not a directory");
        }
        parent = up;
    }
    None
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
}
