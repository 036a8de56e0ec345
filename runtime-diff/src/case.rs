//! A shrunk disagreement as a conformance case to paste into
//! `runtime-adapters/tests/conformance/cases.rs` (and its name into the `conformance!` list in
//! `main.rs`): it replays the steps on each runtime and asserts what Docker observed at each.

use crate::ops::{ImageChoice, NetworkChoice, Op, PortChoice, Program};
use serde_json::Value;
use std::fmt::Write as _;

/// The case for the steps `steps` (each with Docker's observation) of sequence `sequence` of
/// the run with `seed`.
pub fn render(seed: u64, sequence: usize, steps: &[(Op, Value)]) -> String {
    let name = format!("runtime_diff_seed_{seed}_sequence_{sequence}");
    let mut case = format!(
        "/// Found by `drydock runtime diff --seed {seed}` (sequence {sequence}, shrunk to {} steps): the\n\
         /// simulated runtime disagreed with Docker at the last step.\n\
         pub async fn {name}<R: Runtime>(fx: &Fx<R>) {{\n    use drydock_runtime_diff::ops::*;\n    fx.replay(&[\n",
        steps.len()
    );
    for (op, observed) in steps {
        let _ = writeln!(case, "        ({}, r##\"{observed}\"##),", rust(op));
    }
    case.push_str("    ])\n    .await;\n}\n");
    case
}

/// `op` as the Rust expression that builds it.
pub fn rust(op: &Op) -> String {
    match op {
        Op::Create { c, program, image, volume, network, port } => format!(
            "Op::Create {{ c: {c}, program: {}, image: {}, volume: {volume:?}, network: {}, port: {} }}",
            program_rust(*program),
            image_rust(*image),
            network.map_or("None".to_string(), |n| format!("Some({})", network_rust(n))),
            port.map_or("None".to_string(), |p| format!("Some({})", port_rust(p))),
        ),
        Op::Connect { n, c, alias } => format!("Op::Connect {{ n: {}, c: {c}, alias: {alias} }}", network_rust(*n)),
        Op::Disconnect { n, c } => format!("Op::Disconnect {{ n: {}, c: {c} }}", network_rust(*n)),
        Op::Together(a, b) => format!("Op::Together(Box::new({}), Box::new({}))", rust(a), rust(b)),
        // The other variants' Debug is their Rust: fields of integers and booleans.
        other => format!("Op::{other:?}"),
    }
}

fn program_rust(program: Program) -> String {
    format!("Program::{program:?}")
}

fn image_rust(image: ImageChoice) -> String {
    format!("ImageChoice::{image:?}")
}

fn network_rust(network: NetworkChoice) -> String {
    match network {
        NetworkChoice::Own(n) => format!("NetworkChoice::Own({n})"),
        NetworkChoice::Bridge => "NetworkChoice::Bridge".to_string(),
    }
}

fn port_rust(port: PortChoice) -> String {
    format!("PortChoice::{port:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_case_names_every_step_in_rust_with_dockers_observation() {
        let steps = vec![
            (
                Op::Create {
                    c: 1,
                    program: Program::Exit(3),
                    image: ImageChoice::Built(0),
                    volume: Some(1),
                    network: Some(NetworkChoice::Own(0)),
                    port: Some(PortChoice::Fixed),
                },
                json!("created"),
            ),
            (
                Op::Together(Box::new(Op::Stop { c: 1, timeout_secs: 2 }), Box::new(Op::Inspect { c: 1 })),
                json!(["done", { "error": "NotFound" }]),
            ),
        ];
        let case = render(7, 3, &steps);
        assert!(case.contains("pub async fn runtime_diff_seed_7_sequence_3<R: Runtime>(fx: &Fx<R>)"), "{case}");
        assert!(case.contains("Op::Create { c: 1, program: Program::Exit(3), image: ImageChoice::Built(0), volume: Some(1), network: Some(NetworkChoice::Own(0)), port: Some(PortChoice::Fixed) }"), "{case}");
        let pair = r###"(Op::Together(Box::new(Op::Stop { c: 1, timeout_secs: 2 }), Box::new(Op::Inspect { c: 1 })), r##"["done",{"error":"NotFound"}]"##)"###;
        assert!(case.contains(pair), "{case}");
    }
}
