//! `.dockerignore`: which files of a build context reach the builder, the contract's definition
//! of a build context. The Docker adapter sends what [`ContextFilter`] lets through; the
//! simulated runtime lets `COPY`/`ADD` see what it lets through, so the two agree on it.
//!
//! The rules are the docker CLI's and moby's (`patternmatcher` and `ignorefile`, and the CLI's
//! archive walk), so a context builds the same through drydock as through `docker build`:
//!
//! - the file is read line by line (a UTF-8 byte order mark before the first is dropped); a line
//!   that begins with `#` is a comment (only in its first column: the check comes before the
//!   trim, as moby's does); each line is trimmed, blank ones skipped;
//! - `!` makes a line an exception (re-includes what earlier lines excluded); a `!` alone is an
//!   error (`illegal exclusion pattern: "!"`);
//! - each pattern is cleaned like Go's `filepath.Clean` (`./a//b/` is `a/b`) and a leading `/`
//!   dropped: patterns are relative to the context root whichever way they are written;
//! - a pattern is a glob as Go's `filepath.Match` reads it (`*` any run of characters but `/`,
//!   `?` one character but `/`, `[...]` a class, `[^...]` a negated one, `\` escapes the next
//!   character), plus `**`: `**/` is any number of directories (none too), a trailing `**`
//!   anything. A pattern `filepath.Match` refuses (an unterminated or empty class, a trailing
//!   `\`) is an error (`syntax error in pattern`);
//! - a pattern matches a path if it matches the path or one of its parent directories, so
//!   `target` (or `target/`) excludes everything under it; the last line that matches decides;
//! - the CLI walks the context: a directory that is excluded is not entered unless an exception
//!   names something under it (an exception whose text starts with the directory's path and a
//!   `/`), so `!*/keep` re-includes nothing below an excluded directory but `!target/keep` does;
//! - the Dockerfile and `.dockerignore` are sent even when excluded (the CLI appends exceptions
//!   for them, `TrimBuildFilesFromExcludes`: the daemon needs them), and then the classic builder
//!   removes them from the context when `.dockerignore` (as written) matches them, so a `COPY .`
//!   does not copy them.
//!
//! Paths are relative to the context root, `/`-separated and cleaned (`a/b`, not `./a/b`).
//! Pure: no I/O, the caller reads the file.

use super::clean_path;
use std::fmt;

/// The file at a context's root that lists what the context leaves out.
pub const DOCKERIGNORE: &str = ".dockerignore";

/// Why a `.dockerignore` cannot be used; `Display` is the matcher's message, as the docker CLI
/// prints it after `error checking context: ` (see [`DockerignoreError::context_message`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockerignoreError {
    /// A line that is only `!` (1-based line number).
    IllegalExclusion { line: usize },
    /// A pattern Go's `filepath.Match` refuses (1-based line number, the pattern as cleaned).
    BadPattern { line: usize, pattern: String },
}

impl DockerignoreError {
    /// The docker CLI's message for a build whose context has this `.dockerignore` (Docker 28's
    /// legacy builder: `error checking context: syntax error in pattern`); nothing is sent.
    pub fn context_message(&self) -> String {
        format!("error checking context: {self}")
    }
}

impl fmt::Display for DockerignoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DockerignoreError::IllegalExclusion { .. } => write!(f, "illegal exclusion pattern: \"!\""),
            DockerignoreError::BadPattern { .. } => write!(f, "syntax error in pattern"),
        }
    }
}

impl std::error::Error for DockerignoreError {}

/// The patterns of one `.dockerignore`, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dockerignore {
    patterns: Vec<Pattern>,
}

/// One line: its cleaned text (without `!`), whether it is an exception, its glob.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    text: String,
    exception: bool,
    glob: Vec<Token>,
}

/// A piece of a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `*`: any run of characters but `/`.
    Star,
    /// `?`: one character but `/`.
    One,
    /// `[...]`: one character in (`negated`: not in) one of the inclusive ranges. As in
    /// `filepath.Match` (and moby's regular expression), a class may match `/`.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// `**` with more after it (a `/` right after it is part of it): nothing, or anything that
    /// ends with `/` (moby's `(.*/)?`).
    Dirs,
    /// `**` at the end: anything (moby's `.*`).
    Rest,
}

impl Dockerignore {
    /// Read a `.dockerignore`'s text (see the module doc).
    pub fn parse(text: &str) -> Result<Dockerignore, DockerignoreError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut patterns = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if raw.starts_with('#') {
                continue;
            }
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                continue;
            }
            let (exception, body) = match trimmed.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, trimmed),
            };
            if body.is_empty() {
                return Err(DockerignoreError::IllegalExclusion { line });
            }
            let cleaned = clean_path(body);
            let text = match cleaned.strip_prefix('/') {
                Some(rest) if !rest.is_empty() => rest.to_string(),
                _ => cleaned,
            };
            let glob = compile(&text).ok_or_else(|| DockerignoreError::BadPattern { line, pattern: text.clone() })?;
            patterns.push(Pattern { text, exception, glob });
        }
        Ok(Dockerignore { patterns })
    }

    /// Whether there are no patterns (nothing is excluded).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `path` is excluded: the last pattern that matches it or one of its parent
    /// directories is not an exception (moby's `MatchesOrParentMatches`).
    pub fn matches(&self, path: &str) -> bool {
        let path = relative(path);
        let parents: Vec<&str> = path.match_indices('/').map(|(i, _)| &path[..i]).collect();
        let mut excluded = false;
        for pattern in &self.patterns {
            // Only a pattern that would change the answer needs trying.
            if pattern.exception != excluded {
                continue;
            }
            if pattern.matches(&path) || parents.iter().any(|parent| pattern.matches(parent)) {
                excluded = !pattern.exception;
            }
        }
        excluded
    }

    /// Whether the CLI's walk goes into directory `dir` (given it reached it): it is not
    /// excluded, or an exception names something under it.
    pub fn enters(&self, dir: &str) -> bool {
        let dir = relative(dir);
        !self.matches(&dir) || {
            let prefix = format!("{dir}/");
            self.patterns.iter().any(|p| p.exception && format!("{}/", p.text).starts_with(&prefix))
        }
    }

    /// Whether the CLI's walk sends `path`: it enters every directory above it and `path` is not
    /// excluded.
    pub fn sends(&self, path: &str) -> bool {
        let path = relative(path);
        path.match_indices('/').all(|(i, _)| self.enters(&path[..i])) && !self.matches(&path)
    }

    /// This with an exception for `path` appended if it is excluded, so that it is sent.
    fn keeping(mut self, path: &str) -> Dockerignore {
        if self.matches(path) {
            let text = relative(path);
            let glob = text.chars().map(Token::Char).collect();
            self.patterns.push(Pattern { text, exception: true, glob });
        }
        self
    }
}

impl Pattern {
    fn matches(&self, path: &str) -> bool {
        let path: Vec<char> = path.chars().collect();
        glob_matches(&self.glob, &path)
    }
}

/// What of a build context reaches the builder, and what of it a `COPY` sees (see the module
/// doc): the context's `.dockerignore` with the Dockerfile and `.dockerignore` kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextFilter {
    /// The `.dockerignore` as written: the builder removes the Dockerfile and `.dockerignore`
    /// when it matches them.
    written: Dockerignore,
    /// With exceptions for the Dockerfile and `.dockerignore`: what the CLI's walk follows.
    sent: Dockerignore,
    /// The Dockerfile's path in the context (cleaned).
    dockerfile: String,
}

impl ContextFilter {
    /// The filter of a context whose `.dockerignore` holds `dockerignore` (`None`: it has none)
    /// and whose build reads the Dockerfile at `dockerfile` (relative to the context).
    pub fn new(dockerignore: Option<&str>, dockerfile: &str) -> Result<ContextFilter, DockerignoreError> {
        let written = dockerignore.map(Dockerignore::parse).transpose()?.unwrap_or_default();
        let dockerfile = relative(dockerfile);
        let sent = written.clone().keeping(DOCKERIGNORE).keeping(&dockerfile);
        Ok(ContextFilter { written, sent, dockerfile })
    }

    /// Whether the walk goes into directory `dir` (given it reached it).
    pub fn enters(&self, dir: &str) -> bool {
        self.sent.enters(dir)
    }

    /// Whether an entry the walk reached is left out of what is sent (the directories above it
    /// were entered, so this is [`ContextFilter::sends`] without checking them again).
    pub fn leaves_out(&self, path: &str) -> bool {
        self.sent.matches(path)
    }

    /// Whether the context sent to the builder holds `path`.
    pub fn sends(&self, path: &str) -> bool {
        self.sent.sends(path)
    }

    /// Whether a `COPY`/`ADD` from the context sees `path`: it is sent, and it is not the
    /// Dockerfile or `.dockerignore` when the `.dockerignore` as written excludes them (the
    /// builder removes them once it has read them).
    pub fn copies(&self, path: &str) -> bool {
        let path = relative(path);
        let removed = (path == DOCKERIGNORE || path == self.dockerfile) && self.written.matches(&path);
        !removed && self.sends(&path)
    }
}

/// A context path as matched: cleaned, relative, without `./`.
fn relative(path: &str) -> String {
    let cleaned = clean_path(path);
    match cleaned.trim_start_matches('/') {
        "" => ".".into(),
        rest => rest.to_string(),
    }
}

/// The glob of a cleaned pattern, as moby compiles it; `None` where `filepath.Match` reports a
/// syntax error.
fn compile(pattern: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut glob = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '*' if chars.get(i) == Some(&'*') => {
                i += 1;
                if chars.get(i) == Some(&'/') {
                    i += 1;
                }
                glob.push(if i == chars.len() { Token::Rest } else { Token::Dirs });
            }
            '*' => glob.push(Token::Star),
            '?' => glob.push(Token::One),
            '\\' => {
                glob.push(Token::Char(*chars.get(i)?));
                i += 1;
            }
            '[' => {
                let (class, next) = class(&chars, i)?;
                glob.push(class);
                i = next;
            }
            c => glob.push(Token::Char(c)),
        }
    }
    Some(glob)
}

/// The class whose text starts at `chars[start]` (after the `[`), and the index after its `]`;
/// `None` where `filepath.Match` refuses it (empty, unterminated, a range missing an end).
fn class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start;
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    loop {
        if chars.get(i) == Some(&']') && !ranges.is_empty() {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        let (lo, next) = class_char(chars, i)?;
        i = next;
        let mut hi = lo;
        if chars.get(i) == Some(&'-') {
            (hi, i) = class_char(chars, i + 1)?;
        }
        ranges.push((lo, hi));
    }
}

/// One character of a class at `chars[i]` (`\` escapes), and the index after it; `None` for a
/// `-` or `]` where a character must be, or a class that ends there (Go's `getEsc`).
fn class_char(chars: &[char], mut i: usize) -> Option<(char, usize)> {
    let mut c = *chars.get(i)?;
    if c == '-' || c == ']' {
        return None;
    }
    if c == '\\' {
        i += 1;
        c = *chars.get(i)?;
    }
    i += 1;
    // The class must go on (at least its `]`).
    chars.get(i)?;
    Some((c, i))
}

/// Whether `glob` matches all of `text`: `done[t][s]` is whether `glob[t..]` matches `text[s..]`,
/// filled from the end (no backtracking, so no pattern takes exponential time).
fn glob_matches(glob: &[Token], text: &[char]) -> bool {
    let (n, m) = (glob.len(), text.len());
    let mut done = vec![vec![false; m + 1]; n + 1];
    done[n][m] = true;
    for t in (0..n).rev() {
        for s in (0..=m).rev() {
            let here = text.get(s).copied();
            let one = |ok: bool| ok && done[t + 1][s + 1];
            done[t][s] = match &glob[t] {
                Token::Char(c) => one(here == Some(*c)),
                Token::One => one(here.is_some_and(|c| c != '/')),
                Token::Class { negated, ranges } => {
                    one(here.is_some_and(|c| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated))
                }
                Token::Star => done[t + 1][s] || (here.is_some_and(|c| c != '/') && done[t][s + 1]),
                Token::Dirs => done[t + 1][s] || (s..m).any(|k| text[k] == '/' && done[t + 1][k + 1]),
                Token::Rest => true,
            };
        }
    }
    done[0][0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ignore(text: &str) -> Dockerignore {
        Dockerignore::parse(text).expect("parses")
    }

    fn texts(ignore: &Dockerignore) -> Vec<String> {
        ignore.patterns.iter().map(|p| format!("{}{}", if p.exception { "!" } else { "" }, p.text)).collect()
    }

    #[test]
    fn comments_blank_lines_and_spaces() {
        let i = ignore("\u{feff}# secrets\n\n   \n  secret.env  \r\n #not a comment\n!  keep.env\n");
        assert_eq!(texts(&i), ["secret.env", "#not a comment", "!keep.env"]);
        assert!(i.matches("secret.env"));
        assert!(!i.matches("# secrets"), "a comment is no pattern");
        assert!(i.matches("#not a comment"), "a # after spaces starts a pattern, as in moby");
        assert!(Dockerignore::parse("").expect("empty").is_empty());
    }

    #[test]
    fn patterns_are_cleaned_and_rooted_at_the_context() {
        let i = ignore("/target/\n./build//out/\ndocs/../notes.md\n/\n");
        assert_eq!(texts(&i), ["target", "build/out", "notes.md", "/"]);
        assert!(i.matches("target"));
        assert!(i.matches("./target/debug/app"), "the path is cleaned too");
        assert!(i.matches("build/out/x"));
        assert!(!i.matches("build/other"));
        assert!(i.matches("notes.md"));
        assert!(!i.matches("docs/notes.md"), "rooted at the context: not in a subdirectory");
        assert!(!i.matches("a"), "`/` names nothing in the context");
    }

    #[test]
    fn a_directory_pattern_excludes_everything_under_it() {
        let i = ignore("target/\nnode_modules\n");
        for path in ["target", "target/debug", "target/debug/deps/x.rlib", "node_modules/a/b/c.js"] {
            assert!(i.matches(path), "{path}");
        }
        for path in ["targets", "src/target", "a/node_modules"] {
            assert!(!i.matches(path), "{path}");
        }
        assert!(!i.enters("target"));
        assert!(!i.sends("target/debug/app"));
    }

    #[test]
    fn star_and_question_stay_within_a_path_component() {
        let i = ignore("*.env\nlog?.txt\n");
        assert!(i.matches("secret.env") && i.matches(".env") && i.matches("prod.env"));
        assert!(!i.matches("config/prod.env"), "`*` does not cross `/`");
        assert!(!i.matches("secret.env.example"));
        assert!(i.matches("log1.txt") && !i.matches("log12.txt") && !i.matches("log.txt"));
        let nested = ignore("*/*.env\n");
        assert!(nested.matches("config/prod.env") && !nested.matches("prod.env") && !nested.matches("a/b/c.env"));
    }

    #[test]
    fn double_star_is_any_number_of_directories() {
        let i = ignore("**/x\n");
        for path in ["x", "a/x", "a/b/c/x", "x/under"] {
            assert!(i.matches(path), "{path}");
        }
        assert!(!i.matches("ax") && !i.matches("a/xy"));
        let tmp = ignore("**/*.tmp\n");
        assert!(tmp.matches("a.tmp") && tmp.matches("src/deep/b.tmp") && !tmp.matches("a.tmpl"));
        let middle = ignore("a/**/b\n");
        assert!(middle.matches("a/b") && middle.matches("a/x/y/b") && !middle.matches("a/xb"));
        let rest = ignore("cache/**\n");
        assert!(rest.matches("cache/a/b") && !rest.matches("cache"), "`cache/**` is what is under it");
        assert!(ignore("**\n").matches("anything/at/all"));
    }

    #[test]
    fn classes_and_escapes() {
        let i = ignore("file[0-9].txt\nv[^ab].md\nstar\\*\n");
        assert!(i.matches("file7.txt") && !i.matches("filex.txt"));
        assert!(i.matches("vc.md") && !i.matches("va.md"));
        assert!(i.matches("star*") && !i.matches("starry"));
    }

    #[test]
    fn an_exception_re_includes_and_the_last_matching_line_decides() {
        let i = ignore("*.env\n!public.env\n");
        assert!(i.matches("secret.env") && !i.matches("public.env"));
        let later = ignore("!public.env\n*.env\n");
        assert!(later.matches("public.env"), "an exception before the exclusion is overridden");
        let again = ignore("*.env\n!*.env\nsecret.env\n");
        assert!(again.matches("secret.env") && !again.matches("public.env"));
    }

    #[test]
    fn the_walk_enters_an_excluded_directory_only_for_an_exception_under_it() {
        let i = ignore("target/\n!target/keep.txt\n");
        assert!(i.enters("target"), "an exception names something under it");
        assert!(!i.sends("target"), "the directory's own entry is not sent");
        assert!(i.sends("target/keep.txt"));
        assert!(!i.sends("target/out.bin"));
        let glob = ignore("target/\n!*/keep.txt\n");
        assert!(!glob.matches("target/keep.txt"), "the matcher alone would keep it");
        assert!(!glob.enters("target") && !glob.sends("target/keep.txt"), "but the walk never gets there");
        let deep = ignore("a\n!a/b/c\n");
        assert!(deep.enters("a") && deep.enters("a/b") && deep.sends("a/b/c") && !deep.sends("a/b/d"));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_clis_message() {
        let e = Dockerignore::parse("ok\n!\n").expect_err("a lone !");
        assert_eq!(e, DockerignoreError::IllegalExclusion { line: 2 });
        assert_eq!(e.context_message(), "error checking context: illegal exclusion pattern: \"!\"");
        for bad in ["a[", "a[]", "[a-]", "a[b", "x\\", "[^]"] {
            let e = Dockerignore::parse(bad).expect_err(bad);
            assert!(matches!(e, DockerignoreError::BadPattern { line: 1, .. }), "{bad}: {e:?}");
            assert_eq!(e.context_message(), "error checking context: syntax error in pattern");
        }
    }

    #[test]
    fn the_dockerfile_and_dockerignore_are_sent_but_not_copied_when_excluded() {
        let f = ContextFilter::new(Some("Dockerfile\n.dockerignore\nsecret.env\n"), "./Dockerfile").expect("parses");
        for path in ["Dockerfile", ".dockerignore"] {
            assert!(f.sends(path) && !f.copies(path), "{path}");
        }
        assert!(!f.sends("secret.env") && !f.copies("secret.env"));
        assert!(f.sends("main.rs") && f.copies("main.rs"));
        let kept = ContextFilter::new(Some("secret.env\n"), "Dockerfile").expect("parses");
        assert!(kept.copies("Dockerfile") && kept.copies(".dockerignore"), "copied when not excluded");
        let nested = ContextFilter::new(Some("docker/\n"), "docker/app.Dockerfile").expect("parses");
        assert!(nested.enters("docker") && nested.sends("docker/app.Dockerfile") && !nested.sends("docker/other"));
        assert!(!nested.copies("docker/app.Dockerfile"));
        let none = ContextFilter::new(None, "Dockerfile").expect("no file");
        assert!(none.copies("Dockerfile") && none.copies("a/b/c") && !none.leaves_out("x"));
    }

    #[test]
    fn sends_is_what_a_walk_with_enters_and_leaves_out_sends() {
        let f = ContextFilter::new(Some("a\n!a/b/keep\nc/*.tmp\n**/skip\n"), "Dockerfile").expect("parses");
        let tree =
            ["a", "a/b", "a/b/keep", "a/b/drop", "a/x", "c", "c/y.tmp", "c/y.txt", "d/skip", "d/skip/e", "Dockerfile"];
        // A walk: an entry is reached when every directory above it is entered.
        for path in tree {
            let reached = path.match_indices('/').all(|(i, _)| f.enters(&path[..i]));
            assert_eq!(f.sends(path), reached && !f.leaves_out(path), "{path}");
        }
        let sent: Vec<&str> = tree.into_iter().filter(|p| f.sends(p)).collect();
        assert_eq!(sent, ["a/b/keep", "c", "c/y.txt", "Dockerfile"]);
    }
}
