//! Named volumes, as Docker 20.10's local volume driver keeps them: by name, with the labels
//! their create gave (none for a volume a container's mount made), a name generated for a create
//! without one (64 hex digits, from the seed and a counter here), and the driver's name rule.
//! The volume API is in `volume_api`; volumes made by mounts, and the anonymous volumes of an
//! image's `VOLUME`s, in `mounts`.

use drydock_engine::runtime::RuntimeError;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A named volume.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SimVolume {
    pub(crate) labels: BTreeMap<String, String>,
    /// Files copied into it through a container's mount: path relative to the volume's root
    /// (clean, without a leading `/`) -> contents. Every container mounting it sees them.
    files: BTreeMap<String, String>,
}

impl SimVolume {
    /// The files copied into it, by path relative to its root.
    pub(crate) fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }
}

/// The named volumes, and the names generated so far.
///
/// *Guarantees* (see [`Volumes::check`]): every volume's name follows the local driver's rule
/// (`[a-zA-Z0-9][a-zA-Z0-9_.-]+`), generated names included; a create of a name taken keeps the
/// volume as it was; generated names derive from the seed and how many were generated, so they
/// are the same on every run and never repeat.
#[derive(Clone, Debug, Default)]
pub(crate) struct Volumes {
    /// Named volumes, by name.
    volumes: BTreeMap<String, SimVolume>,
    /// Volume names generated so far (for creates without a name, and anonymous volumes).
    generated: u64,
    /// The anonymous volumes made for each container (for `VOLUME`s of its image no mount
    /// covered), by container id: removed with it.
    anonymous: BTreeMap<String, Vec<String>>,
    seed: u64,
}

impl Volumes {
    /// No volumes; names generated from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Volumes { seed, ..Volumes::default() }
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.volumes.contains_key(name)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&SimVolume> {
        self.volumes.get(name)
    }

    /// The volumes, in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &SimVolume)> {
        self.volumes.iter()
    }

    /// A fresh name for a create without one.
    pub(crate) fn generate_name(&mut self) -> String {
        self.generated += 1;
        let mut h = Sha256::new();
        h.update(b"volume");
        h.update(self.seed.to_le_bytes());
        h.update(self.generated.to_le_bytes());
        hex::encode(h.finalize())
    }

    /// Volume `name` (a valid name: see [`check_volume_name`]) with `labels`, unless it exists:
    /// then it stays as it is. The volume.
    pub(crate) fn create(&mut self, name: &str, labels: BTreeMap<String, String>) -> &SimVolume {
        debug_assert!(check_volume_name(name).is_ok(), "volume name {name:?}");
        self.volumes.entry(name.to_string()).or_insert_with(|| SimVolume { labels, files: BTreeMap::new() })
    }

    /// Write `contents` at `path` (relative to the root, clean) in volume `name`, replacing a
    /// file there and anything below it (a directory the file replaces, as an archive's
    /// extraction removes it). Whether there is such a volume.
    pub(crate) fn write_file(&mut self, name: &str, path: &str, contents: &str) -> bool {
        let Some(volume) = self.volumes.get_mut(name) else { return false };
        let below = format!("{path}/");
        volume.files.retain(|p, _| !p.starts_with(&below));
        volume.files.insert(path.to_string(), contents.to_string());
        true
    }

    /// Volume `name` loses everything in it (an extraction removed its mount point's contents).
    pub(crate) fn empty(&mut self, name: &str) {
        if let Some(volume) = self.volumes.get_mut(name) {
            volume.files.clear();
        }
    }

    /// A new anonymous volume for container `id`, under a generated name. Its name.
    pub(crate) fn create_anonymous(&mut self, id: &str) -> String {
        let name = self.generate_name();
        self.volumes.insert(name.clone(), SimVolume::default());
        self.anonymous.entry(id.to_string()).or_default().push(name.clone());
        name
    }

    /// The anonymous volumes made for container `id`, forgotten as its: the container is gone.
    pub(crate) fn take_anonymous(&mut self, id: &str) -> Vec<String> {
        self.anonymous.remove(id).unwrap_or_default()
    }

    /// The containers with anonymous volumes, by id, and their volumes' names.
    pub(crate) fn anonymous(&self) -> impl Iterator<Item = (&String, &Vec<String>)> {
        self.anonymous.iter()
    }

    /// Remove volume `name`. Whether there was one.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        self.volumes.remove(name).is_some()
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, volume) in &self.volumes {
            check_volume_name(name).map_err(|e| format!("volumes: {e}"))?;
            let unclean = |p: &String| p.is_empty() || p.starts_with('/') || super::shell::clean_path(p) != **p;
            if let Some(path) = volume.files.keys().find(|p| unclean(p)) {
                return Err(format!("volumes: volume {name} holds a file at {path:?}, not a clean relative path"));
            }
        }
        for (id, names) in &self.anonymous {
            if let Some(name) = names.iter().find(|n| !self.volumes.contains_key(*n)) {
                return Err(format!("volumes: anonymous volume {name} of container {id} is gone"));
            }
        }
        Ok(())
    }
}

/// The local volume driver's name rule (`validateName`).
pub(crate) fn check_volume_name(name: &str) -> Result<(), RuntimeError> {
    if name.len() == 1 {
        return Err(RuntimeError::Invalid(format!(
            "create {name}: volume name is too short, names should be at least two alphanumeric characters"
        )));
    }
    let bytes = name.as_bytes();
    if !bytes[0].is_ascii_alphanumeric() || !bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b)) {
        return Err(RuntimeError::Invalid(format!(
            "create {name}: {name:?} includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_keeps_an_existing_volume_and_names_are_generated_afresh() {
        let mut volumes = Volumes::new(1);
        let labels = BTreeMap::from([("a".to_string(), "1".to_string())]);
        assert_eq!(volumes.create("v1", labels.clone()).labels, labels);
        assert_eq!(volumes.create("v1", BTreeMap::new()).labels, labels, "the first labels stay");
        let (first, second) = (volumes.generate_name(), volumes.generate_name());
        assert_ne!(first, second);
        assert_eq!(Volumes::new(1).generate_name(), first, "the same seed, the same names");
        volumes.create(&first, BTreeMap::new());
        volumes.check().expect("valid names");
        assert_eq!(volumes.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), [first.as_str(), "v1"]);
        assert!(volumes.remove("v1") && !volumes.remove("v1") && !volumes.contains("v1"));
    }

    #[test]
    fn files_written_replace_what_is_below_them_and_go_when_emptied() {
        let mut volumes = Volumes::new(1);
        volumes.create("v1", BTreeMap::new());
        assert!(volumes.write_file("v1", "sub/f.txt", "f") && volumes.write_file("v1", "top", "t"));
        assert!(!volumes.write_file("nope", "x", "x"), "no such volume");
        assert!(volumes.write_file("v1", "sub", "a file now"), "replaces the directory");
        let files = |volumes: &Volumes| volumes.get("v1").map(|v| v.files().clone()).unwrap_or_default();
        assert_eq!(files(&volumes).keys().collect::<Vec<_>>(), ["sub", "top"]);
        volumes.create("v1", BTreeMap::new());
        assert_eq!(files(&volumes).len(), 2, "a create of a name taken keeps its files");
        volumes.check().expect("clean relative paths");
        volumes.empty("v1");
        assert!(files(&volumes).is_empty());
        for unclean in ["/abs", "a/../b", ""] {
            let mut broken = volumes.clone();
            broken.write_file("v1", unclean, "x");
            assert!(broken.check().is_err(), "{unclean:?}");
        }
    }

    #[test]
    fn names_follow_the_local_drivers_rule() {
        for good in ["v1", "a.b-c_d", "0x"] {
            assert_eq!(check_volume_name(good), Ok(()), "{good}");
        }
        for bad in ["a", "-v", "v/1", "v 1"] {
            assert!(matches!(check_volume_name(bad), Err(RuntimeError::Invalid(_))), "{bad}");
        }
        let mut volumes = Volumes::new(1);
        volumes.volumes.insert("bad name".into(), SimVolume::default());
        assert!(volumes.check().is_err());
    }
}
