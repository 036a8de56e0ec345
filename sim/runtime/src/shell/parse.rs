//! The grammar of the shell subset: lists joined by `;`, newlines, `&&` and `||`; pipelines
//! `a | b` with `!`; `while`/`until ... do ... done`; `for NAME [in WORDS]; do ... done`;
//! `if ... then ... [elif ...] [else ...] fi`; simple commands: assignments (`X=1`, alone or
//! before a command), words (see `lex` for quoting and expansions) and redirections (`>`, `>>`,
//! `>|`, `<` to or from a file, `>&N`/`<&N` duplicating 0, 1 or 2, each with an optional
//! descriptor 0, 1 or 2 before it). Anything else (`&`, subshells, groups, `case`, functions,
//! here-documents, redirections of a compound command, other descriptors) is a syntax error
//! here, so a script outside the subset visibly exits 2 instead of being half understood.

use super::lex::{Token, Word, describe, tokenize};

/// A sequence of and-or lists, run one after the other.
pub(super) type List = Vec<AndOr>;

/// `a && b || c`: pipelines joined left to right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Connector {
    And,
    Or,
}

/// Commands joined by `|` (one, most often), the status inverted by a leading `!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pipeline {
    pub negate: bool,
    pub commands: Vec<Command>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Command {
    Simple(Simple),
    /// `while` (`until`: with the condition inverted). `id` tells the loops of one script apart.
    Loop {
        id: usize,
        until: bool,
        condition: List,
        body: List,
    },
    /// `for NAME in WORDS; do BODY; done`; no `in`: the positional parameters.
    For {
        name: String,
        words: Option<Vec<Word>>,
        body: List,
    },
    /// `if`/`elif` branches in order, and the `else` list.
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
}

/// `X=1 Y=2 cmd args >file`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Simple {
    pub assignments: Vec<(String, Word)>,
    pub words: Vec<Word>,
    pub redirections: Vec<Redirection>,
}

/// One redirection of descriptor `fd` (0, 1 or 2), applied in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Redirection {
    pub fd: u8,
    pub how: Redirect,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Redirect {
    /// `>` or `>|`: the file, emptied (made if missing).
    Write(Word),
    /// `>>`: the file, appended to.
    Append(Word),
    /// `<`: read the file.
    Read(Word),
    /// `>&N` / `<&N`: the same as descriptor N.
    Dup(u8),
}

/// Parse a script; `Err` carries a message like busybox's.
pub(super) fn parse(script: &str) -> Result<List, String> {
    let tokens = tokenize(script)?;
    let mut parser = Parser { tokens, at: 0, loops: 0 };
    let list = parser.list(&[])?;
    match parser.peek() {
        None => Ok(list),
        Some(token) => Err(format!("syntax error: unexpected {}", describe(token))),
    }
}

/// Reserved words that end a list.
const TERMINATORS: [&str; 6] = ["do", "done", "then", "elif", "else", "fi"];

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    loops: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_keyword(&self) -> Option<&str> {
        match self.peek() {
            Some(Token::Word(word)) => word.bare(),
            _ => None,
        }
    }

    fn skip_separators(&mut self) {
        while self.peek() == Some(&Token::Separator) {
            self.at += 1;
        }
    }

    fn expect(&mut self, keyword: &str) -> Result<(), String> {
        if self.peek_keyword() == Some(keyword) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("syntax error: {keyword:?} expected"))
        }
    }

    /// And-or lists up to the end or one of `until` (not consumed). Empty lists inside compound
    /// commands are errors, as in sh.
    fn list(&mut self, until: &[&str]) -> Result<List, String> {
        let mut list = Vec::new();
        loop {
            self.skip_separators();
            match self.peek_keyword() {
                _ if self.peek().is_none() => break,
                Some(k) if until.contains(&k) => break,
                Some(k) if TERMINATORS.contains(&k) => return Err(format!("syntax error: unexpected {k}")),
                _ => {}
            }
            list.push(self.and_or()?);
            match self.peek() {
                None | Some(Token::Separator) => {}
                Some(Token::Word(_)) if self.peek_keyword().is_some_and(|k| until.contains(&k)) => {}
                Some(token) => return Err(format!("syntax error: unexpected {}", describe(token))),
            }
        }
        if list.is_empty() && !until.is_empty() {
            return Err(format!("syntax error: unexpected {}", self.peek_keyword().unwrap_or("end of file")));
        }
        Ok(list)
    }

    fn and_or(&mut self) -> Result<AndOr, String> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let connector = match self.peek() {
                Some(Token::And) => Connector::And,
                Some(Token::Or) => Connector::Or,
                _ => break,
            };
            self.at += 1;
            self.skip_separators();
            rest.push((connector, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> Result<Pipeline, String> {
        let negate = self.peek_keyword() == Some("!");
        if negate {
            self.at += 1;
        }
        let mut commands = vec![self.command()?];
        while self.peek() == Some(&Token::Pipe) {
            self.at += 1;
            self.skip_separators();
            commands.push(self.command()?);
        }
        Ok(Pipeline { negate, commands })
    }

    fn command(&mut self) -> Result<Command, String> {
        match self.peek_keyword() {
            Some(keyword @ ("while" | "until")) => {
                let until = keyword == "until";
                self.at += 1;
                let condition = self.list(&["do"])?;
                let body = self.do_group()?;
                self.loops += 1;
                Ok(Command::Loop { id: self.loops, until, condition, body })
            }
            Some("for") => {
                self.at += 1;
                self.for_loop()
            }
            Some("if") => {
                self.at += 1;
                self.if_command()
            }
            _ => self.simple().map(Command::Simple),
        }
    }

    /// `do LIST done`.
    fn do_group(&mut self) -> Result<List, String> {
        self.expect("do")?;
        let body = self.list(&["done"])?;
        self.expect("done")?;
        Ok(body)
    }

    /// After `for`: `NAME [in WORD...] ; do LIST done` (the `;` may be newlines, or absent
    /// without `in`).
    fn for_loop(&mut self) -> Result<Command, String> {
        let name = match self.peek() {
            Some(Token::Word(word)) => word.bare().filter(|n| is_name(n)).map(str::to_string),
            _ => None,
        };
        let name = name.ok_or("syntax error: bad for loop variable")?;
        self.at += 1;
        self.skip_separators();
        let mut words = None;
        if self.peek_keyword() == Some("in") {
            self.at += 1;
            let mut list = Vec::new();
            while let Some(Token::Word(word)) = self.peek() {
                list.push(word.clone());
                self.at += 1;
            }
            match self.peek() {
                Some(Token::Separator) => self.skip_separators(),
                Some(token) => return Err(format!("syntax error: unexpected {}", describe(token))),
                None => return Err("syntax error: unexpected end of file".into()),
            }
            words = Some(list);
        }
        let body = self.do_group()?;
        Ok(Command::For { name, words, body })
    }

    /// After `if`: its branches up to `fi`.
    fn if_command(&mut self) -> Result<Command, String> {
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let condition = self.list(&["then"])?;
            self.expect("then")?;
            let body = self.list(&["elif", "else", "fi"])?;
            branches.push((condition, body));
            match self.peek_keyword() {
                Some("elif") => self.at += 1,
                Some("else") => {
                    self.at += 1;
                    otherwise = Some(self.list(&["fi"])?);
                    break;
                }
                _ => break,
            }
        }
        self.expect("fi")?;
        Ok(Command::If { branches, otherwise })
    }

    fn simple(&mut self) -> Result<Simple, String> {
        let mut simple = Simple::default();
        while let Some(Token::Word(word)) = self.peek() {
            let word = word.clone();
            self.at += 1;
            if let Some(redirection) = self.redirection(&word)? {
                simple.redirections.push(redirection);
            } else if simple.words.is_empty()
                && let Some(assignment) = assignment(&word)
            {
                simple.assignments.push(assignment);
            } else {
                simple.words.push(word);
            }
        }
        if simple.words.is_empty() && simple.assignments.is_empty() && simple.redirections.is_empty() {
            let next = self.peek().map_or("end of file".to_string(), describe);
            return Err(format!("syntax error: unexpected {next}"));
        }
        Ok(simple)
    }

    /// `word` as a redirection (its target in it, or the next word), if it is one.
    fn redirection(&mut self, word: &Word) -> Result<Option<Redirection>, String> {
        let text = word.leading_text();
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let operator_text = &text[digits..];
        let Some(operator) =
            [">>", ">&", ">|", "<&", "<<", "<>", ">", "<"].into_iter().find(|o| operator_text.starts_with(o))
        else {
            return Ok(None);
        };
        let fd = match &text[..digits] {
            "" if operator.starts_with('<') => 0,
            "" => 1,
            "0" => 0,
            "1" => 1,
            "2" => 2,
            other => return Err(format!("syntax error: unsupported descriptor {other}")),
        };
        let mut target = word.without_leading(digits + operator.len());
        if target.parts.is_empty() {
            match self.peek() {
                Some(Token::Word(next)) => {
                    target = next.clone();
                    self.at += 1;
                }
                Some(token) => return Err(format!("syntax error: unexpected {}", describe(token))),
                None => return Err("syntax error: unexpected newline".into()),
            }
        }
        let how = match operator {
            ">" | ">|" => Redirect::Write(target),
            ">>" => Redirect::Append(target),
            "<" => Redirect::Read(target),
            ">&" | "<&" => match target.bare() {
                Some("0") => Redirect::Dup(0),
                Some("1") => Redirect::Dup(1),
                Some("2") => Redirect::Dup(2),
                _ => return Err("syntax error: unsupported redirection".into()),
            },
            _ => return Err(format!("syntax error: unsupported redirection {operator}")),
        };
        Ok(Some(Redirection { fd, how }))
    }
}

/// `NAME=value` (the name unquoted): the name and the value's word.
fn assignment(word: &Word) -> Option<(String, Word)> {
    let (name, _) = word.leading_text().split_once('=')?;
    is_name(name).then(|| (name.to_string(), word.without_leading(name.len() + 1)))
}

/// A variable's name: a letter or `_`, then letters, digits and `_`.
pub(super) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parts of a word, for tests.
#[cfg(test)]
pub(super) fn text_of(word: &Word) -> String {
    use super::lex::{Param, Part};
    word.parts
        .iter()
        .map(|p| match p {
            Part::Text { text, .. } => text.clone(),
            Part::Param { param: Param::Status, .. } => "$?".into(),
            Part::Param { param, .. } => format!("${param:?}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &List) -> Vec<Vec<String>> {
        list.iter()
            .map(|a| match &a.first.commands[0] {
                Command::Simple(simple) => simple.words.iter().map(text_of).collect(),
                other => vec![format!("{other:?}")],
            })
            .collect()
    }

    #[test]
    fn words_quotes_and_separators() {
        let list = parse("echo 'a b' \"c $? d\"; exit 3\n true # comment").expect("parses");
        assert_eq!(
            words(&list),
            vec![
                vec!["echo".to_string(), "a b".into(), "c $? d".into()],
                vec!["exit".into(), "3".into()],
                vec!["true".into()]
            ]
        );
    }

    #[test]
    fn redirections_are_taken_out_of_the_words() {
        let list = parse("echo hi >/dev/null 2>&1; cat < /dev/null > out").expect("parses");
        assert_eq!(words(&list), vec![vec!["echo".to_string(), "hi".into()], vec!["cat".into()]]);
        let Command::Simple(simple) = &list[0].first.commands[0] else { panic!("simple") };
        assert_eq!(simple.redirections.len(), 2);
        assert_eq!(simple.redirections[1], Redirection { fd: 2, how: Redirect::Dup(1) });
    }

    #[test]
    fn assignments_come_before_the_command() {
        let list = parse("X=1 Y=\"a b\" env Z=2").expect("parses");
        let Command::Simple(simple) = &list[0].first.commands[0] else { panic!("simple") };
        assert_eq!(simple.assignments.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["X", "Y"]);
        assert_eq!(simple.words.iter().map(text_of).collect::<Vec<_>>(), ["env", "Z=2"]);
    }

    #[test]
    fn compound_commands() {
        let list = parse("trap 'exit 0' TERM; while true; do sleep 1; done").expect("parses");
        assert!(matches!(&list[1].first.commands[0], Command::Loop { until: false, body, .. } if body.len() == 1));
        let list = parse("if test -d /x; then exit 1; elif false; then exit 2; else exit 3; fi").expect("parses");
        assert!(
            matches!(&list[0].first.commands[0], Command::If { branches, otherwise: Some(_) } if branches.len() == 2)
        );
        let list = parse("! false && true || exit 4").expect("parses");
        assert!(list[0].first.negate);
        assert_eq!(list[0].rest.iter().map(|(c, _)| *c).collect::<Vec<_>>(), vec![Connector::And, Connector::Or]);
        let list = parse("for x in a \"$Y\"\ndo echo $x; done | cat").expect("parses");
        assert!(matches!(&list[0].first.commands[0], Command::For { words: Some(w), .. } if w.len() == 2));
        assert_eq!(list[0].first.commands.len(), 2);
    }

    #[test]
    fn outside_the_subset_is_a_syntax_error() {
        for script in [
            "while true; do",
            "sleep 1 &",
            "a |",
            "(exit 1)",
            "echo $(date)",
            "echo ${X:-y}",
            "echo $$ $@",
            "echo `date`",
            "echo 'open",
            "do",
            "while true; do done",
            "for 1x in a; do :; done",
            "cat <<EOF",
            "echo 3>x",
            "if true; then :; fi > f",
        ] {
            assert!(parse(script).is_err(), "{script}");
        }
        assert_eq!(parse("").expect("empty"), Vec::new());
    }
}
