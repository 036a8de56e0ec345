//! The grammar of the shell subset: lists joined by `;`, newlines, `&&` and `||`; `!`;
//! `while`/`until ... do ... done`; `if ... then ... [elif ...] [else ...] fi`; simple commands
//! of words in single or double quotes or bare, with `$?` expanded, comments, and redirections
//! of standard output (to standard error, `>&2`, or away, `>/dev/null` or a file; other
//! redirections are parsed and ignored). Anything else (pipes, `&`, subshells,
//! `for`, `case`, functions, other expansions) is a syntax error here, so a script outside the
//! subset visibly exits 2 instead of being half understood.

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

/// One command, its status inverted by a leading `!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pipeline {
    pub negate: bool,
    pub command: Command,
}

/// Where a simple command's standard output goes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Out {
    #[default]
    Stdout,
    Stderr,
    /// To a file or `/dev/null`: not the container's output.
    Nowhere,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Command {
    Simple(Vec<Word>, Out),
    /// `while` (`until`: with the condition inverted). `id` tells the loops of one script apart.
    Loop {
        id: usize,
        until: bool,
        condition: List,
        body: List,
    },
    /// `if`/`elif` branches in order, and the `else` list.
    If {
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
}

/// A word: literal text and `$?` expansions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub parts: Vec<Part>,
    /// Some of it was quoted: never a keyword or a redirection.
    pub quoted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Text(String),
    /// `$?`: the status of the last command.
    Status,
}

impl Word {
    /// The word as written, when it is plain text (keywords, operators).
    fn bare(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text(text)] if !self.quoted => Some(text),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(Word),
    /// `;` or a newline.
    Separator,
    And,
    Or,
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

fn describe(token: &Token) -> String {
    match token {
        Token::Word(word) => word.bare().unwrap_or("word").to_string(),
        Token::Separator => "\";\"".into(),
        Token::And => "\"&&\"".into(),
        Token::Or => "\"||\"".into(),
    }
}

fn tokenize(script: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = script.chars().peekable();
    let mut word: Option<Word> = None;
    let push_text = |word: &mut Option<Word>, c: char| {
        let w = word.get_or_insert(Word { parts: Vec::new(), quoted: false });
        match w.parts.last_mut() {
            Some(Part::Text(text)) => text.push(c),
            _ => w.parts.push(Part::Text(c.to_string())),
        }
    };
    let end_word = |word: &mut Option<Word>, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut word, &mut tokens),
            '\n' | ';' => {
                end_word(&mut word, &mut tokens);
                tokens.push(Token::Separator);
            }
            '#' if word.is_none() => {
                while chars.peek().is_some_and(|c| *c != '\n') {
                    chars.next();
                }
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                end_word(&mut word, &mut tokens);
                tokens.push(Token::And);
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                end_word(&mut word, &mut tokens);
                tokens.push(Token::Or);
            }
            // `2>&1` is a redirection, kept in its word; a lone `&` runs in the background.
            '&' if word.as_ref().is_some_and(ends_with_redirect) => push_text(&mut word, c),
            '&' | '|' | '(' | ')' | '`' => return Err(format!("syntax error: unsupported {c:?}")),
            '\'' => {
                word.get_or_insert(Word { parts: Vec::new(), quoted: false }).quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => push_text(&mut word, c),
                        None => return Err("syntax error: unterminated quoted string".into()),
                    }
                }
            }
            '"' => {
                word.get_or_insert(Word { parts: Vec::new(), quoted: false }).quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if chars.peek().is_some_and(|c| "\"\\$`".contains(*c)) => {
                            if let Some(c) = chars.next() {
                                push_text(&mut word, c);
                            }
                        }
                        Some('$') if chars.peek() == Some(&'?') => {
                            chars.next();
                            push_status(&mut word);
                        }
                        Some('$' | '`') if chars.peek().is_some_and(|c| *c != ' ' && *c != '"') => {
                            return Err("syntax error: unsupported expansion".into());
                        }
                        Some(c) => push_text(&mut word, c),
                        None => return Err("syntax error: unterminated quoted string".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(c) => {
                    word.get_or_insert(Word { parts: Vec::new(), quoted: false }).quoted = true;
                    push_text(&mut word, c);
                }
            },
            '$' if chars.peek() == Some(&'?') => {
                chars.next();
                push_status(&mut word);
            }
            '$' if chars.peek().is_some_and(|c| c.is_ascii_alphanumeric() || "{(_".contains(*c)) => {
                return Err("syntax error: unsupported expansion".into());
            }
            c => push_text(&mut word, c),
        }
    }
    end_word(&mut word, &mut tokens);
    Ok(tokens)
}

fn push_status(word: &mut Option<Word>) {
    word.get_or_insert(Word { parts: Vec::new(), quoted: false }).parts.push(Part::Status);
}

fn ends_with_redirect(word: &Word) -> bool {
    matches!(word.parts.last(), Some(Part::Text(text)) if text.ends_with('>') || text.ends_with('<'))
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
        Ok(Pipeline { negate, command: self.command()? })
    }

    fn command(&mut self) -> Result<Command, String> {
        match self.peek_keyword() {
            Some(keyword @ ("while" | "until")) => {
                let until = keyword == "until";
                self.at += 1;
                let condition = self.list(&["do"])?;
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                self.loops += 1;
                Ok(Command::Loop { id: self.loops, until, condition, body })
            }
            Some("if") => {
                self.at += 1;
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
            _ => {
                let mut words = Vec::new();
                while let Some(Token::Word(word)) = self.peek() {
                    words.push(word.clone());
                    self.at += 1;
                }
                if words.is_empty() {
                    let next = self.peek().map_or("end of file".to_string(), describe);
                    return Err(format!("syntax error: unexpected {next}"));
                }
                {
                    let (words, out) = without_redirections(words);
                    Ok(Command::Simple(words, out))
                }
            }
        }
    }
}

/// Take the redirections out (`>/dev/null`, `2>&1`, `> file`, `</dev/null`, `>&2`), and say where
/// standard output goes (the last redirection of it wins, as in sh).
fn without_redirections(words: Vec<Word>) -> (Vec<Word>, Out) {
    let mut kept = Vec::new();
    let mut out = Out::Stdout;
    let mut skip_target = false;
    for word in words {
        if skip_target {
            skip_target = false;
            continue;
        }
        if let Some(text) = word.bare() {
            out = match text {
                ">&2" | "1>&2" => Out::Stderr,
                t if (t.starts_with('>') || t.starts_with("1>")) && !t.contains('&') => Out::Nowhere,
                _ => out,
            };
        }
        let redirect = match word.parts.first() {
            Some(Part::Text(text)) if !word.quoted || word.parts.len() > 1 => {
                let operator = text.trim_start_matches(|c: char| c.is_ascii_digit());
                operator.starts_with('>') || operator.starts_with('<')
            }
            _ => false,
        };
        if !redirect {
            kept.push(word);
            continue;
        }
        // The operator alone (`>`, `2>`, `>>`): its target is the next word.
        if let Some(text) = word.bare() {
            let operator = text.trim_start_matches(|c: char| c.is_ascii_digit());
            skip_target = matches!(operator, ">" | ">>" | "<" | ">|");
        }
    }
    (kept, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &List) -> Vec<Vec<String>> {
        list.iter()
            .map(|a| match &a.first.command {
                Command::Simple(words, _) => words
                    .iter()
                    .map(|w| {
                        w.parts
                            .iter()
                            .map(|p| match p {
                                Part::Text(t) => t.clone(),
                                Part::Status => "$?".into(),
                            })
                            .collect()
                    })
                    .collect(),
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
    fn redirections_are_dropped() {
        let list = parse("echo hi >/dev/null 2>&1; cat < /dev/null > out").expect("parses");
        assert_eq!(words(&list), vec![vec!["echo".to_string(), "hi".into()], vec!["cat".into()]]);
    }

    #[test]
    fn compound_commands() {
        let list = parse("trap 'exit 0' TERM; while true; do sleep 1; done").expect("parses");
        assert!(matches!(&list[1].first.command, Command::Loop { until: false, body, .. } if body.len() == 1));
        let list = parse("if test -d /x; then exit 1; elif false; then exit 2; else exit 3; fi").expect("parses");
        assert!(matches!(&list[0].first.command, Command::If { branches, otherwise: Some(_) } if branches.len() == 2));
        let list = parse("! false && true || exit 4").expect("parses");
        assert!(list[0].first.negate);
        assert_eq!(list[0].rest.iter().map(|(c, _)| *c).collect::<Vec<_>>(), vec![Connector::And, Connector::Or]);
    }

    #[test]
    fn outside_the_subset_is_a_syntax_error() {
        for script in [
            "while true; do",
            "sleep 1 &",
            "a | b",
            "(exit 1)",
            "echo $HOME",
            "echo 'open",
            "do",
            "while true; do done",
        ] {
            assert!(parse(script).is_err(), "{script}");
        }
        assert_eq!(parse("").expect("empty"), Vec::new());
    }
}
