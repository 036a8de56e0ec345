//! The Dockerfile grammar, as Docker 20.10's classic builder parses it (`moby/buildkit`'s
//! `frontend/dockerfile/parser` and `instructions`), for the subset the simulated builder runs:
//!
//! - one instruction a line; a `\` at the end of a line continues it on the next; blank lines
//!   and lines beginning with `#` (comments, parser directives) are skipped;
//! - the keyword is case-insensitive; one Docker does not know is "dockerfile parse error line
//!   N: unknown instruction: FOO"; a file of zero bytes is "the Dockerfile (PATH) cannot be
//!   empty", one without instructions "failed to parse Dockerfile: file with no instructions";
//! - `FROM` opens a stage (`FROM image [AS name]`); only `ARG` may come before the first one,
//!   anything else there is "no build stage in current context";
//! - `CMD`, `ENTRYPOINT` and `RUN` take a JSON array (exec form) or a command line (shell form:
//!   `/bin/sh -c LINE`); `COPY`/`ADD` take sources and a destination, as words or a JSON array,
//!   after `--from=`, `--chown=` and `--chmod=` flags;
//! - `$NAME`, `${NAME}`, `${NAME:-default}` and `${NAME:+alternative}` expand to the stage's
//!   `ARG` and `ENV` values in the instructions Docker expands (not in `RUN`, `CMD` and
//!   `ENTRYPOINT`, which the shell expands).

use std::collections::BTreeMap;

/// The instructions Docker 20.10 knows.
const KNOWN: [&str; 18] = [
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

/// One instruction: its keyword (upper case), its arguments and the text the build's progress
/// shows for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Instruction {
    pub keyword: String,
    pub args: String,
    pub text: String,
}

/// A stage: its `FROM` (the base, as written) and name, and what follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stage {
    pub from: Instruction,
    pub base: String,
    pub name: Option<String>,
    pub instructions: Vec<Instruction>,
}

/// A parsed Dockerfile: the `ARG`s before the first `FROM`, then the stages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Dockerfile {
    pub meta_args: Vec<Instruction>,
    pub stages: Vec<Stage>,
}

/// Parse `text`, the Dockerfile at `path` (for messages).
pub(super) fn parse(path: &str, text: &str) -> Result<Dockerfile, String> {
    if text.is_empty() {
        return Err(format!("the Dockerfile ({path}) cannot be empty"));
    }
    let mut instructions = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        match line.strip_suffix('\\') {
            Some(rest) => {
                joined.push_str(rest);
                pending = Some((start, joined));
            }
            None => {
                joined.push_str(line);
                instructions.push((start, joined));
            }
        }
    }
    if let Some(last) = pending {
        instructions.push(last);
    }
    instructions.retain(|(_, line)| !line.trim().is_empty());
    if instructions.is_empty() {
        return Err("failed to parse Dockerfile: file with no instructions".into());
    }
    let mut file = Dockerfile { meta_args: Vec::new(), stages: Vec::new() };
    for (line_number, line) in instructions {
        let line = line.trim();
        let (word, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let keyword = word.to_ascii_uppercase();
        if !KNOWN.contains(&keyword.as_str()) {
            return Err(format!("dockerfile parse error line {line_number}: unknown instruction: {keyword}"));
        }
        let instruction = Instruction { keyword, args: args.trim().to_string(), text: line.to_string() };
        match (instruction.keyword.as_str(), file.stages.last_mut()) {
            ("FROM", _) => {
                let words = split_words(&instruction.args);
                let words: Vec<&String> = words.iter().filter(|w| !w.starts_with("--")).collect();
                let (base, name) = match words.as_slice() {
                    [base] => ((*base).clone(), None),
                    [base, r#as, name] if r#as.eq_ignore_ascii_case("as") => {
                        ((*base).clone(), Some(name.to_ascii_lowercase()))
                    }
                    _ => return Err(format!("FROM requires either one or three arguments (line {line_number})")),
                };
                file.stages.push(Stage { from: instruction, base, name, instructions: Vec::new() });
            }
            ("ARG", None) => file.meta_args.push(instruction),
            (_, None) => return Err("no build stage in current context".into()),
            (_, Some(stage)) => stage.instructions.push(instruction),
        }
    }
    if file.stages.is_empty() {
        return Err("no build stage in current context".into());
    }
    Ok(file)
}

/// Exec form (a JSON array of strings) or shell form (`/bin/sh -c LINE`).
pub(super) fn command_form(args: &str) -> Vec<String> {
    if args.trim_start().starts_with('[')
        && let Ok(argv) = serde_json::from_str::<Vec<String>>(args)
    {
        return argv;
    }
    vec!["/bin/sh".into(), "-c".into(), args.to_string()]
}

/// `COPY`/`ADD` arguments: flags (`--from=stage`, ...) and the paths, the destination last.
pub(super) fn copy_args(args: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut rest = args.trim();
    let mut flags = BTreeMap::new();
    while let Some(flag) = rest.strip_prefix("--") {
        let (word, after) = flag.split_once(char::is_whitespace).unwrap_or((flag, ""));
        let (name, value) = word.split_once('=').unwrap_or((word, ""));
        flags.insert(name.to_string(), value.to_string());
        rest = after.trim_start();
    }
    let paths = match serde_json::from_str::<Vec<String>>(rest) {
        Ok(paths) if rest.starts_with('[') => paths,
        _ => split_words(rest),
    };
    (flags, paths)
}

/// `KEY=VALUE` pairs (`ENV`, `LABEL`), values unquoted; `ENV KEY VALUE` (one pair, the rest of
/// the line its value) too.
pub(super) fn pairs(args: &str) -> Vec<(String, String)> {
    let words = split_words(args);
    if let Some(first) = words.first()
        && !first.contains('=')
    {
        let value = args.trim_start()[first.len()..].trim().to_string();
        return vec![(first.clone(), value)];
    }
    words
        .into_iter()
        .map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (w, String::new()),
        })
        .collect()
}

/// Words split at white space outside quotes, quotes removed, `\` escaping the next character.
pub(super) fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', q) if q != Some('\'') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (q, None) if q == '"' || q == '\'' => {
                quote = Some(q);
                in_word = true;
            }
            (c, Some(q)) if c == q => quote = None,
            (c, None) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (c, _) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME:+alternative}` replaced from `vars` (unset:
/// empty); `\$` is a literal `$`.
pub(super) fn expand(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'$') => {
                out.push('$');
                chars.next();
            }
            '$' if chars.peek() == Some(&'{') => {
                chars.next();
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    inner.push(c);
                }
                let value = match (inner.split_once(":-"), inner.split_once(":+")) {
                    (Some((name, default)), _) => {
                        vars.get(name).filter(|v| !v.is_empty()).cloned().unwrap_or_else(|| expand(default, vars))
                    }
                    (_, Some((name, alternative))) => match vars.get(name).filter(|v| !v.is_empty()) {
                        Some(_) => expand(alternative, vars),
                        None => String::new(),
                    },
                    _ => vars.get(&inner).cloned().unwrap_or_default(),
                };
                out.push_str(&value);
            }
            '$' if chars.peek().is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') => {
                let mut name = String::new();
                while let Some(c) = chars.peek().copied().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    name.push(c);
                    chars.next();
                }
                out.push_str(vars.get(&name).map(String::as_str).unwrap_or_default());
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stages_continuations_and_comments() {
        let text = "# syntax comment\nARG BASE=img\nFROM $BASE AS Build\nRUN echo a \\\n  && echo b\n\nfrom build\ncmd [\"x\"]\n";
        let file = parse("Dockerfile", text).expect("parses");
        assert_eq!(file.meta_args.len(), 1);
        assert_eq!(file.stages.len(), 2);
        assert_eq!(file.stages[0].base, "$BASE");
        assert_eq!(file.stages[0].name.as_deref(), Some("build"));
        assert_eq!(file.stages[0].instructions[0].args, "echo a && echo b");
        assert_eq!(file.stages[1].base, "build");
        assert_eq!(file.stages[1].instructions[0].keyword, "CMD");
        assert_eq!(file.stages[1].instructions[0].text, "cmd [\"x\"]");
    }

    #[test]
    fn refuses_what_docker_refuses() {
        assert_eq!(parse("Dockerfile", ""), Err("the Dockerfile (Dockerfile) cannot be empty".into()));
        assert_eq!(
            parse("Dockerfile", "# nothing\n\n"),
            Err("failed to parse Dockerfile: file with no instructions".into())
        );
        assert_eq!(
            parse("Dockerfile", "FROM a\nfoo bar\n"),
            Err("dockerfile parse error line 2: unknown instruction: FOO".into())
        );
        assert_eq!(parse("Dockerfile", "RUN true\n"), Err("no build stage in current context".into()));
    }

    #[test]
    fn forms_pairs_and_expansion() {
        assert_eq!(command_form("[\"cat\", \"/f\"]"), ["cat", "/f"]);
        assert_eq!(command_form("exit 3"), ["/bin/sh", "-c", "exit 3"]);
        assert_eq!(pairs("A=1 B=\"two words\""), [("A".into(), "1".into()), ("B".into(), "two words".into())]);
        assert_eq!(pairs("A one two"), [("A".to_string(), "one two".to_string())]);
        let (flags, paths) = copy_args("--from=build --chown=1:1 a b /dst/");
        assert_eq!(flags.get("from").map(String::as_str), Some("build"));
        assert_eq!(paths, ["a", "b", "/dst/"]);
        let vars = BTreeMap::from([("A".to_string(), "x".to_string())]);
        assert_eq!(expand("$A-${A}-${B:-d}-${A:+y}-${B:+z}-\\$A", &vars), "x-x-d-y--$A");
    }
}
