//! `--jobs N`: how many worker threads a sweep, the golden check or the bench uses.

/// Parse `--jobs N`: a number of worker threads, at least 1.
pub(crate) fn parse(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("0 threads run nothing: give 1 or more (or leave --jobs out for one per core)".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a number of threads: give 1 or more")),
    }
}

/// Worker threads: as asked (`--jobs` is at least 1), else one per core.
pub(crate) fn or_all_cores(asked: Option<usize>) -> usize {
    asked.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1)
}
