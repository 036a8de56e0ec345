//! The files a run reads and writes: the container's ([`Fs`]) under what the run has written
//! so far. A write (`>`, `>>`) goes to the run's own layer; the runtime applies that layer to
//! the container when the main process ends (see `SimRuntime::apply_written`). The working
//! directory is `/` (an image's `WORKDIR` is not modelled).
//!
//! Redirections fail as busybox's do on Docker 20.10: `sh: can't create PATH: nonexistent
//! directory` when the directory is missing (or is a file, or is under `/proc`), `...: Is a
//! directory`, `...: Read-only file system` under a read-only mount; `sh: can't open PATH: no
//! such file` for a missing input; the command does not run and its status is 1.

use super::applets::Lookup;
use super::{Fs, IMAGE_EXECUTABLES, clean_path, parent_of};
use std::collections::BTreeMap;

/// Files that exist in every container though the model does not know their contents.
const OPAQUE_FILES: [&str; 3] = ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"];

/// Why a file cannot be written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Refusal {
    Directory,
    NoDirectory,
    ReadOnly,
}

impl Refusal {
    /// As busybox's shell says it.
    fn shell(self) -> &'static str {
        match self {
            Refusal::Directory => "Is a directory",
            Refusal::NoDirectory => "nonexistent directory",
            Refusal::ReadOnly => "Read-only file system",
        }
    }

    /// As the C library says it (`touch`).
    fn errno(self) -> &'static str {
        match self {
            Refusal::Directory => "Is a directory",
            Refusal::NoDirectory => "No such file or directory",
            Refusal::ReadOnly => "Read-only file system",
        }
    }
}

/// A path as the process meant it: relative to `/`, cleaned.
pub(super) fn absolute(path: &str) -> String {
    match path.starts_with('/') {
        true => clean_path(path),
        false => clean_path(&format!("/{path}")),
    }
}

/// The container's files as one run sees them.
pub(super) struct Files<'a> {
    fs: &'a Fs,
    /// What the run wrote, by absolute path: the whole contents of each.
    written: BTreeMap<String, String>,
    /// Bumped by each write that changed something (a loop that writes is not periodic).
    version: u64,
}

impl<'a> Files<'a> {
    pub(super) fn new(fs: &'a Fs) -> Self {
        Files { fs, written: BTreeMap::new(), version: 0 }
    }

    pub(super) fn version(&self) -> u64 {
        self.version
    }

    pub(super) fn into_written(self) -> BTreeMap<String, String> {
        self.written
    }

    pub(super) fn is_dir(&self, path: &str) -> bool {
        self.fs.dirs.contains(&absolute(path))
    }

    /// A regular file: one the model knows, one the run wrote, or one every container has.
    pub(super) fn is_file(&self, path: &str) -> bool {
        let path = absolute(path);
        self.contents(&path).is_some()
            || (self.fs.busybox && IMAGE_EXECUTABLES.iter().any(|e| path == format!("/bin/{e}")))
            || OPAQUE_FILES.contains(&path.as_str())
    }

    /// Whether the file at `path` may be executed (its mode has an `x`; what a run writes has
    /// none).
    pub(super) fn is_executable(&self, path: &str) -> bool {
        let path = absolute(path);
        !self.written.contains_key(&path) && self.fs.executables.contains(&path)
    }

    fn contents(&self, path: &str) -> Option<&String> {
        self.written.get(path).or_else(|| self.fs.files.get(path))
    }

    /// What an applet reading `path` finds.
    pub(super) fn lookup(&self, path: &str) -> Lookup {
        let path = absolute(path);
        match self.contents(&path) {
            Some(contents) => Lookup::File(contents.clone()),
            None if self.fs.dirs.contains(&path) => Lookup::Dir,
            None => Lookup::Missing,
        }
    }

    /// `< PATH`: its contents, or busybox's message.
    pub(super) fn read(&self, path: &str) -> Result<String, String> {
        match self.lookup(path) {
            Lookup::File(contents) => Ok(contents),
            Lookup::Dir => Ok(String::new()),
            Lookup::Missing => Err(format!("sh: can't open {path}: no such file")),
        }
    }

    /// `> PATH` (`append`: `>>`) opens the file for writing: emptied unless appended to, made if
    /// missing. Its absolute path, or busybox's message.
    pub(super) fn open(&mut self, path: &str, append: bool) -> Result<String, String> {
        let clean = absolute(path);
        if let Some(why) = self.cannot_create(&clean) {
            return Err(format!("sh: can't create {path}: {}", why.shell()));
        }
        let existing = self.contents(&clean).cloned();
        let contents = match (append, existing) {
            (true, Some(contents)) => contents,
            _ => String::new(),
        };
        self.replace(&clean, contents);
        Ok(clean)
    }

    /// Why a file cannot be made or written at absolute `path`, if it cannot.
    fn cannot_create(&self, path: &str) -> Option<Refusal> {
        if self.fs.dirs.contains(path) {
            return Some(Refusal::Directory);
        }
        let parent = parent_of(path).unwrap_or_else(|| "/".into());
        if !self.fs.dirs.contains(&parent) || parent == "/proc" || parent.starts_with("/proc/") {
            return Some(Refusal::NoDirectory);
        }
        if self.fs.read_only.iter().any(|target| path.starts_with(&format!("{target}/"))) {
            return Some(Refusal::ReadOnly);
        }
        None
    }

    /// busybox `touch PATH`: a missing file is made, empty; `Err` with its message if it
    /// cannot be (`touch: PATH: No such file or directory`).
    pub(super) fn touch(&mut self, path: &str) -> Result<(), String> {
        let clean = absolute(path);
        if self.fs.dirs.contains(&clean) || self.is_file(&clean) {
            return Ok(());
        }
        if let Some(why) = self.cannot_create(&clean) {
            return Err(format!("touch: {path}: {}", why.errno()));
        }
        self.replace(&clean, String::new());
        Ok(())
    }

    /// Append `text` to the file at absolute `path` (opened by [`Files::open`]).
    pub(super) fn append(&mut self, path: &str, text: &str) {
        let mut contents = self.contents(path).cloned().unwrap_or_default();
        contents.push_str(text);
        self.replace(path, contents);
    }

    fn replace(&mut self, path: &str, contents: String) {
        if self.contents(path) != Some(&contents) || !self.written.contains_key(path) {
            self.version += 1;
        }
        self.written.insert(path.to_string(), contents);
    }
}
