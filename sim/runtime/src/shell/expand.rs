//! Parameter expansion and field splitting, as busybox `sh` does them for the subset `lex`
//! reads: a variable's value (empty when unset), `$?`, `$#`, `$0`..`$9`; an unquoted
//! expansion's value is split into fields at spaces, tabs and newlines (the default `IFS`; `IFS`
//! itself is not modelled), a quoted one never is. Pathname expansion (`*`, `?`, `[`) is not
//! modelled: such a word stays as written.

use super::lex::{Param, Part, Word};
use std::collections::BTreeMap;

/// A shell's variables: the environment it got (exported) and those it set.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Vars {
    /// Name -> (value, exported); `export X` of an unset `X` marks it without a value.
    values: BTreeMap<String, (Option<String>, bool)>,
}

impl Vars {
    /// A process's variables: its environment, all exported.
    pub(super) fn from_env(env: &BTreeMap<String, String>) -> Vars {
        Vars { values: env.iter().map(|(k, v)| (k.clone(), (Some(v.clone()), true))).collect() }
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(|(value, _)| value.as_deref())
    }

    /// `NAME=value`: exported if it was.
    pub(super) fn set(&mut self, name: &str, value: String) {
        let exported = self.values.get(name).is_some_and(|(_, e)| *e);
        self.values.insert(name.to_string(), (Some(value), exported));
    }

    /// `export NAME[=value]`.
    pub(super) fn export(&mut self, name: &str, value: Option<String>) {
        let entry = self.values.entry(name.to_string()).or_insert((None, true));
        entry.1 = true;
        if value.is_some() {
            entry.0 = value;
        }
    }

    pub(super) fn unset(&mut self, name: &str) {
        self.values.remove(name);
    }

    /// The environment a child process gets: the exported variables that have a value (busybox
    /// passes no `X` for `export X` of an unset `X`).
    pub(super) fn environment(&self) -> BTreeMap<String, String> {
        let exported = self.values.iter().filter(|(_, (_, exported))| *exported);
        exported.filter_map(|(k, (v, _))| Some((k.clone(), v.clone()?))).collect()
    }
}

/// What expansions read: the variables, the last status, the positional parameters (`$0`
/// first).
pub(super) struct Scope<'a> {
    pub vars: &'a Vars,
    pub status: i64,
    pub args: &'a [String],
}

impl Scope<'_> {
    fn value(&self, param: &Param) -> String {
        match param {
            Param::Status => self.status.to_string(),
            Param::Count => self.args.len().saturating_sub(1).to_string(),
            Param::Positional(n) => self.args.get(*n).cloned().unwrap_or_default(),
            Param::Var(name) => self.vars.get(name).unwrap_or_default().to_string(),
        }
    }
}

/// A command's words as fields: each word expanded, its unquoted expansions split.
pub(super) fn fields(words: &[Word], scope: &Scope) -> Vec<String> {
    words.iter().flat_map(|w| split_word(w, scope)).collect()
}

/// A word expanded with no field splitting (assignments, redirection targets, `case` words).
pub(super) fn single(word: &Word, scope: &Scope) -> String {
    word.parts
        .iter()
        .map(|part| match part {
            Part::Text { text, .. } => text.clone(),
            Part::Param { param, .. } => scope.value(param),
        })
        .collect()
}

/// One word's fields: text and quoted expansions join the current field; an unquoted
/// expansion's blanks end it. A word that expands to nothing unquoted is no field at all; a
/// quoted empty string is one empty field.
fn split_word(word: &Word, scope: &Scope) -> Vec<String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut started = false;
    for part in &word.parts {
        match part {
            Part::Text { text, quoted } => {
                current.push_str(text);
                started |= *quoted || !text.is_empty();
            }
            Part::Param { param, quoted: true } => {
                current.push_str(&scope.value(param));
                started = true;
            }
            Part::Param { param, quoted: false } => {
                for c in scope.value(param).chars() {
                    if matches!(c, ' ' | '\t' | '\n') {
                        if started {
                            fields.push(std::mem::take(&mut current));
                            started = false;
                        }
                    } else {
                        current.push(c);
                        started = true;
                    }
                }
            }
        }
    }
    if started {
        fields.push(current);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::super::lex::{Token, tokenize};
    use super::*;

    fn expand(script: &str, vars: &[(&str, &str)]) -> Vec<String> {
        let env = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let vars = Vars::from_env(&env);
        let args = ["sh".to_string(), "one".into()];
        let scope = Scope { vars: &vars, status: 3, args: &args };
        let words: Vec<Word> = tokenize(script)
            .expect("tokens")
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w),
                _ => None,
            })
            .collect();
        fields(&words, &scope)
    }

    #[test]
    fn unquoted_expansions_are_split_and_quoted_ones_are_not() {
        let vars = [("A", " x  y "), ("E", "")];
        assert_eq!(expand("$A", &vars), ["x", "y"]);
        assert_eq!(expand("\"$A\"", &vars), [" x  y "]);
        assert_eq!(expand("a$A.b", &vars), ["a", "x", "y", ".b"], "its blanks end fields");
        assert_eq!(expand("$E $NOPE", &vars), Vec::<String>::new(), "no field from nothing");
        assert_eq!(expand("\"$E\" ''", &vars), ["", ""], "quoted: an empty field");
        assert_eq!(expand("${A}z $? $# $0 $1 $2", &vars), ["x", "y", "z", "3", "1", "sh", "one"]);
        assert_eq!(expand("'$A' \\$A $ a$", &vars), ["$A", "$A", "$", "a$"]);
    }
}
