//! Runtime requests and results as the trace records them: the engine's own summaries of them
//! ([`RuntimeRequest::summarize`], [`RuntimeReply::summarize`], `RuntimeError::summarize`: a
//! stable code, then the fields their words name) and the words themselves (their `Display`, an
//! error's code).
//!
//! A new runtime request or reply needs nothing here: the runtime contract
//! (`drydock_engine::runtime`) gives it its code, its fields and its words where it is declared.

use super::encode::{Encode, Encoder, encode_map};
use drydock_engine::runtime::{ContainerState, Fields, RuntimeReply, RuntimeRequest, RuntimeResult};
use std::collections::BTreeMap;
use std::fmt;

/// A runtime request, as a trace line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeOp<'a>(pub &'a RuntimeRequest);

impl<'a> From<&'a RuntimeRequest> for RuntimeOp<'a> {
    fn from(request: &'a RuntimeRequest) -> Self {
        RuntimeOp(request)
    }
}

/// What the runtime answered, summarized; or its error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeOutcome<'a>(pub &'a RuntimeResult);

impl<'a> From<&'a RuntimeResult> for RuntimeOutcome<'a> {
    fn from(result: &'a RuntimeResult) -> Self {
        RuntimeOutcome(result)
    }
}

impl fmt::Display for RuntimeOp<'_> {
    /// As the runtime request describes itself: `create ns-a from nginx`, `start 3f2a…`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for RuntimeOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Ok(reply) => reply.fmt(f),
            Err(error) => f.write_str(error.code()),
        }
    }
}

/// The engine's summaries, encoded: codes as tags, texts as strings, counts as numbers.
impl Fields for Encoder {
    fn code(&mut self, code: u16) {
        self.tag(code);
    }

    fn text(&mut self, value: &str) {
        self.str(value);
    }

    fn flag(&mut self, value: bool) {
        self.bool(value);
    }

    fn count(&mut self, value: usize) {
        self.usize(value);
    }

    fn labels(&mut self, labels: &BTreeMap<String, String>) {
        encode_map(labels, self);
    }

    fn state(&mut self, state: ContainerState) {
        state.encode(self);
    }
}

impl Encode for RuntimeOp<'_> {
    fn encode(&self, out: &mut Encoder) {
        self.0.summarize(out);
    }
}

impl Encode for RuntimeOutcome<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self.0 {
            Ok(reply) => RuntimeReply::summarize(reply, out),
            Err(error) => error.summarize(out),
        }
    }
}
