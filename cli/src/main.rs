//! `drydock`: the container-lifecycle engine and its deterministic simulator.

/// mimalloc rather than the system allocator: a sweep allocates and frees small objects at a
/// high rate (about a fifth of its time went to glibc's malloc and free).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    drydock::Drydock::new("drydock").main()
}
