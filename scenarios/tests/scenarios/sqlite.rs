//! The SQLite backend is a drop-in for the memory one: 200 seeds of every scenario give the same
//! trace digest with the store over an in-memory SQLite database as over the memory backend, and
//! at the end of every run the database holds exactly what the store holds.

use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::store::{Backend, BackendError, Change, ObjectWrite, Snapshot};
use drydock_scenarios::{FaultSelection, Scenario};
use drydock_sim::{World, WorldConfig};
use drydock_store_sqlite::SqliteBackend;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;

const SEEDS: u64 = 200;

/// SQLite, and what it must hold: on drop, the database is loaded back and compared.
struct Checked {
    sqlite: SqliteBackend,
    objects: BTreeMap<ObjectKey, Arc<Object>>,
    revision: u64,
}

impl Backend for Checked {
    fn load(&mut self) -> Result<Snapshot, BackendError> {
        self.sqlite.load()
    }

    fn apply(&mut self, change: &Change<'_>) -> Result<(), BackendError> {
        self.sqlite.apply(change)?;
        match change.write() {
            ObjectWrite::Put(object) => self.objects.insert(object.key(), object.clone()),
            ObjectWrite::Remove(object) => self.objects.remove(&object.key()),
        };
        self.revision = change.revision();
        Ok(())
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        let loaded = self.sqlite.load().unwrap();
        assert_eq!(loaded.revision, self.revision, "the database's revision");
        let objects: BTreeMap<ObjectKey, Arc<Object>> = loaded.objects.into_iter().map(|o| (o.key(), o)).collect();
        assert!(objects == self.objects, "the database's objects differ from the store's");
        assert_eq!(loaded.log.last().map(|e| e.resource_version()), Some(self.revision).filter(|r| *r > 0));
    }
}

fn checked_sqlite() -> Box<dyn Backend> {
    Box::new(Checked { sqlite: SqliteBackend::in_memory().unwrap(), objects: BTreeMap::new(), revision: 0 })
}

/// The world's seed of `seed`, as drydock-scenarios derives it (its third stream). Were this to
/// drift from the crate's, every digest below would differ: the test cannot pass by mistake.
fn world_seed(seed: u64) -> u64 {
    let mut root = ChaCha8Rng::seed_from_u64(seed);
    root.next_u64();
    root.next_u64();
    root.next_u64()
}

/// The digest of `seed` of `scenario` with the store over SQLite.
fn sqlite_digest(scenario: &Scenario, seed: u64) -> String {
    let (workload, faults) = scenario.materialize_with(seed, &FaultSelection::Default);
    let config = WorldConfig { store_backend: Some(checked_sqlite), ..(scenario.world)() };
    World::new(&config, &workload, faults, world_seed(seed), false).run().digest
}

#[test]
fn every_scenario_gives_the_same_digests_over_sqlite() {
    let runs: Vec<(&Scenario, u64)> =
        drydock_scenarios::all().iter().flat_map(|s| (0..SEEDS).map(move |seed| (s, seed))).collect();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let differences: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|job| {
                let runs = &runs;
                scope.spawn(move || {
                    let mut differences = Vec::new();
                    for (scenario, seed) in runs.iter().skip(job).step_by(jobs) {
                        let memory = scenario.run(*seed, false).digest;
                        let sqlite = sqlite_digest(scenario, *seed);
                        if memory != sqlite {
                            differences
                                .push(format!("{} seed {seed}: memory {memory}, sqlite {sqlite}", scenario.name));
                        }
                    }
                    differences
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert!(differences.is_empty(), "{} of {} runs differ:\n{}", differences.len(), runs.len(), differences.join("\n"));
}
