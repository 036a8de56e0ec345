//! What log lines learn from the simulator: the simulated time and the process of what runs
//! now, and, while a run explains itself, a place to put them so they land in its trace beside
//! the event that logged them.
//!
//! The engine logs through `tracing`; a subscriber (the `drydock` binary's) stamps each line
//! with [`now`] instead of the wall clock and offers it to [`capture`] before writing it out.
//! Both are per thread: sweeps run one world per thread, so each line carries its own world's
//! time.

use drydock_engine::MonoTime;
use std::cell::{Cell, RefCell};

thread_local! {
    static NOW: Cell<Option<(MonoTime, Option<usize>)>> = const { Cell::new(None) };
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// The simulated time of the event this thread's world is handling, and the engine process it
/// is handing it to, if any. `None` outside a simulated run.
pub fn now() -> Option<(MonoTime, Option<usize>)> {
    NOW.with(Cell::get)
}

/// Take `line` into the current event's trace, if this thread's world is explaining itself.
/// False if nobody captures: write it out as usual.
pub fn capture(line: &str) -> bool {
    CAPTURED.with(|captured| match &mut *captured.borrow_mut() {
        Some(lines) => {
            lines.push(line.to_string());
            true
        }
        None => false,
    })
}

pub(crate) fn set(now: MonoTime, process: Option<usize>) {
    NOW.with(|cell| cell.set(Some((now, process))));
}

/// Start (or stop) capturing this thread's log lines.
pub(crate) fn capturing(on: bool) {
    CAPTURED.with(|captured| *captured.borrow_mut() = on.then(Vec::new));
}

/// The lines captured since the last call.
pub(crate) fn take_captured() -> Vec<String> {
    CAPTURED.with(|captured| captured.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
}

/// The run is over: lines are no longer about it.
pub(crate) fn clear() {
    NOW.with(|cell| cell.set(None));
    capturing(false);
}
