//! Where the binary's `tracing` output goes and what it looks like.
//!
//! The filter is `DRYDOCK_LOG`, else `RUST_LOG` (as Rust users expect), else a default per
//! command. Colours only on a terminal. Inside the simulator each line is stamped with the
//! simulated time and the engine process instead of the wall clock, and a run that explains
//! itself (`sim repro --trace`) takes the lines into its trace, printed beside the event that
//! logged them on the trace's stream.

use std::io::{IsTerminal as _, Write};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

/// Install the subscriber for a command: `simulated` for `drydock sim ...`.
pub fn init(default_level: &str, simulated: bool) {
    let filter = EnvFilter::try_from_env("DRYDOCK_LOG")
        .or_else(|_| EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let result = if simulated {
        // Captured lines are printed again with the trace, where colour codes would be noise.
        builder.with_ansi(false).with_timer(SimulatedTime).with_writer(|| SimWriter).try_init()
    } else {
        builder.with_ansi(std::io::stderr().is_terminal()).with_writer(std::io::stderr).try_init()
    };
    // Already installed (a user's binary with its own subscriber): theirs stays.
    drop(result);
}

/// The simulated time and process of what logs, where there is one; the wall clock elsewhere.
struct SimulatedTime;

impl FormatTime for SimulatedTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match drydock_sim::stamp::now() {
            Some((now, Some(process))) => write!(w, "{now} p{process}"),
            Some((now, None)) => write!(w, "{now}"),
            None => SystemTime.format_time(w),
        }
    }
}

/// Writes a formatted line into the trace of the run that logged it, if that run explains
/// itself, else to stderr. (The formatter writes each line with one `write`.)
struct SimWriter;

impl Write for SimWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf);
        if !drydock_sim::stamp::capture(line.trim_end_matches('\n')) {
            std::io::stderr().write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
