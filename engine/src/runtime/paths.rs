//! Paths as Docker compares them.

/// Go's `filepath.Clean` (on `/`), which Docker applies to the paths it compares (copy
/// destinations, `.dockerignore` patterns, the files a shell names): one slash between
/// components, no `.`, `..` resolved (never above `/`), no trailing slash. A relative path stays
/// relative, and is `.` when nothing is left.
pub fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if rooted => {}
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}
