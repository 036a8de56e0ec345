//! `drydock`: the container-lifecycle engine and its deterministic simulator.

/// mimalloc rather than the system allocator: a sweep allocates and frees small objects at a
/// high rate (about a fifth of its time went to glibc's malloc and free). The feature
/// `system-allocator` keeps the system's, for heap profilers that see only malloc
/// (`tools/heap-profile`).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    drydock::Drydock::new("drydock").main()
}
