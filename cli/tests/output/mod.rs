//! Reading what the `drydock` binary printed: shared by the tests of `drydock sim`.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::Value;
use std::process::Output;

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last line of stdout, as JSON (what `--json` prints).
pub fn last_json(output: &Output) -> Value {
    let stdout = stdout(output);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
}
