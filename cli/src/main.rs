//! `drydock`: the container-lifecycle engine and its deterministic simulator.

fn main() -> std::process::ExitCode {
    drydock::Drydock::new("drydock").main()
}
