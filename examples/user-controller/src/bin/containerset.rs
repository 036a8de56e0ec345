//! The `drydock` command line with the ContainerSet kind and controller added: `containerset up`,
//! `containerset daemon`, and `containerset sim` with the example's scenarios.

use user_controller::{Variant, components, scenario};

fn main() -> std::process::ExitCode {
    drydock::Drydock::new("containerset")
        .components(components(Variant::Fixed))
        .scenario(scenario(Variant::Fixed))
        .scenario(scenario(Variant::Buggy))
        .main()
}
