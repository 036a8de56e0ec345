//! Files in containers: what a container's processes can read, and copying files in, as Docker
//! 20.10's archive upload (`PUT /containers/{id}/archive`, what `docker cp` does) does it:
//!
//! - the container may be created, running or stopped; a missing one is 404 "No such
//!   container: ID";
//! - each file lands at its absolute destination, replacing a file there, its missing parent
//!   directories made;
//! - a container's files start as its image's (what its build copied in) and outlive its runs.
//!
//! Only contents are modelled (mode and owner are accepted, not enforced), and only for reading:
//! `cat` and `test` in the shell model (see `shell`).

use super::SimRuntime;
use super::containers::not_found;
use super::shell::{Fs, clean_path};
use drydock_engine::api::container::CopiedFile;
use drydock_engine::runtime::{RuntimeReply, RuntimeResult};

impl SimRuntime {
    pub(super) fn copy_files(&mut self, id_or_name: &str, files: &[CopiedFile]) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        let container = self.containers.get_mut(&id).ok_or_else(|| not_found(&id))?;
        for file in files {
            let path = clean_path(&format!("/{}", file.destination));
            container.files.insert(path, file.contents.clone());
        }
        Ok(RuntimeReply::Done)
    }

    /// The contents of file `path` in container `id`, if the model knows it.
    pub fn container_file(&self, id: &str, path: &str) -> Option<&str> {
        let id = self.resolve(id).ok()?;
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{create, id_of};
    use super::*;
    use drydock_engine::WallTime;
    use drydock_engine::runtime::{ContainerCreate, RuntimeError, RuntimeRequest};

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
}
