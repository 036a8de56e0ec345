//! The run's trace: one line per event, folded into a running SHA-256 digest that identifies the
//! run. Two runs with the same digest saw the same events in the same order at the same times.

use sha2::{Digest, Sha256};

pub struct Trace {
    digest: Sha256,
    lines: Option<Vec<String>>,
    events: u64,
}

impl Trace {
    /// `keep_lines`: keep every line for printing (slower); otherwise only the digest.
    pub fn new(keep_lines: bool) -> Self {
        Trace { digest: Sha256::new(), lines: keep_lines.then(Vec::new), events: 0 }
    }

    pub fn record(&mut self, line: &str) {
        self.events += 1;
        self.digest.update(line.as_bytes());
        self.digest.update(b"\n");
        if let Some(lines) = &mut self.lines {
            lines.push(line.to_string());
        }
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    /// Hex digest of everything recorded so far.
    pub fn digest(&self) -> String {
        hex::encode(self.digest.clone().finalize())
    }

    pub fn take_lines(&mut self) -> Option<Vec<String>> {
        self.lines.take()
    }
}
