//! Words and operators of a script: quoting (`'...'`, `"..."`, `\`), comments, the operators
//! `;`, newline, `&&`, `||`, `|`, and the expansions the model knows: `$NAME`, `${NAME}`, `$?`,
//! `$#`, `$0`..`$9`, `${N}`. Any other `$` form (`$(...)`, `$((...))`, `${X:-y}`, `$$`, `$@`,
//! `$*`, `$!`), backquotes, `&`, `(` and `)` are syntax errors, so a script outside the subset
//! visibly exits 2 instead of being half understood.

/// A word: literal text and expansions, each quoted or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub parts: Vec<Part>,
    /// Some of it was quoted: never a keyword, an assignment or a redirection operator.
    pub quoted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Text {
        text: String,
        quoted: bool,
    },
    /// An expansion; unquoted, its value is split into fields.
    Param {
        param: Param,
        quoted: bool,
    },
}

/// What a `$` expands to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Param {
    /// `$?`: the status of the last command.
    Status,
    /// `$#`: how many positional parameters.
    Count,
    /// `$0`..`$9`, `${N}`: the shell's name, then its arguments.
    Positional(usize),
    /// `$NAME`, `${NAME}`: a variable (empty when unset).
    Var(String),
}

impl Word {
    fn empty() -> Word {
        Word { parts: Vec::new(), quoted: false }
    }

    /// The word as written, when it is plain unquoted text (keywords, operators).
    pub(super) fn bare(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text { text, quoted: false }] if !self.quoted => Some(text),
            _ => None,
        }
    }

    /// The unquoted text the word starts with ("" if none).
    pub(super) fn leading_text(&self) -> &str {
        match self.parts.first() {
            Some(Part::Text { text, quoted: false }) => text,
            _ => "",
        }
    }

    /// The word without its first `n` bytes of leading unquoted text.
    pub(super) fn without_leading(&self, n: usize) -> Word {
        let mut parts = self.parts.clone();
        if let Some(Part::Text { text, quoted: false }) = parts.first_mut() {
            text.drain(..n.min(text.len()));
            if text.is_empty() {
                parts.remove(0);
            }
        }
        Word { parts, quoted: self.quoted }
    }

    fn push_char(&mut self, c: char, quoted: bool) {
        self.quoted |= quoted;
        match self.parts.last_mut() {
            Some(Part::Text { text, quoted: q }) if *q == quoted => text.push(c),
            _ => self.parts.push(Part::Text { text: c.to_string(), quoted }),
        }
    }

    /// `""` or `''`: quoted, even with nothing in it.
    fn mark_quoted(&mut self) {
        self.quoted = true;
        if self.parts.is_empty() {
            self.parts.push(Part::Text { text: String::new(), quoted: true });
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    /// `;` or a newline.
    Separator,
    And,
    Or,
    Pipe,
}

pub(super) fn describe(token: &Token) -> String {
    match token {
        Token::Word(word) => word.bare().unwrap_or("word").to_string(),
        Token::Separator => "\";\"".into(),
        Token::And => "\"&&\"".into(),
        Token::Or => "\"||\"".into(),
        Token::Pipe => "\"|\"".into(),
    }
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

pub(super) fn tokenize(script: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = script.chars().peekable();
    let mut word: Option<Word> = None;
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
            // `>|` is a redirection; `2>&1` too, kept in its word; a lone `&` runs in the background.
            '|' | '&' if word.as_ref().is_some_and(ends_with_redirect) => {
                word.get_or_insert_with(Word::empty).push_char(c, false)
            }
            '|' => {
                end_word(&mut word, &mut tokens);
                tokens.push(Token::Pipe);
            }
            // `echo hi>/f`: a redirection starts a word of its own (`2>` keeps its descriptor).
            '>' | '<' => {
                if word.as_ref().is_some_and(|w| !is_operator_prefix(w)) {
                    end_word(&mut word, &mut tokens);
                }
                word.get_or_insert_with(Word::empty).push_char(c, false);
            }
            '&' | '(' | ')' | '`' => return Err(format!("syntax error: unsupported {c:?}")),
            '\'' => {
                let w = word.get_or_insert_with(Word::empty);
                w.mark_quoted();
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push_char(c, true),
                        None => return Err("syntax error: unterminated quoted string".into()),
                    }
                }
            }
            '"' => double_quoted(&mut chars, word.get_or_insert_with(Word::empty))?,
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(c) => word.get_or_insert_with(Word::empty).push_char(c, true),
            },
            '$' => dollar(&mut chars, word.get_or_insert_with(Word::empty), false)?,
            c => word.get_or_insert_with(Word::empty).push_char(c, false),
        }
    }
    end_word(&mut word, &mut tokens);
    Ok(tokens)
}

fn double_quoted(chars: &mut Chars, w: &mut Word) -> Result<(), String> {
    w.mark_quoted();
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') if chars.peek().is_some_and(|c| "\"\\$`\n".contains(*c)) => match chars.next() {
                Some('\n') | None => {}
                Some(c) => w.push_char(c, true),
            },
            Some('$') => dollar(chars, w, true)?,
            Some('`') => return Err("syntax error: unsupported '`'".into()),
            Some(c) => w.push_char(c, true),
            None => return Err("syntax error: unterminated quoted string".into()),
        }
    }
}

/// After a `$`: an expansion the model knows, a literal `$` (followed by nothing a name could
/// start with), or an error.
fn dollar(chars: &mut Chars, w: &mut Word, quoted: bool) -> Result<(), String> {
    let unsupported = || Err("syntax error: unsupported expansion".to_string());
    let param = match chars.peek().copied() {
        Some('?') => Param::Status,
        Some('#') => Param::Count,
        Some(d @ '0'..='9') => Param::Positional(d as usize - '0' as usize),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            let mut name = String::new();
            while let Some(c) = chars.peek().copied().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                name.push(c);
                chars.next();
            }
            w.quoted |= quoted;
            w.parts.push(Part::Param { param: Param::Var(name), quoted });
            return Ok(());
        }
        Some('{') => {
            chars.next();
            let mut inside = String::new();
            loop {
                match chars.next() {
                    Some('}') => break,
                    Some(c) => inside.push(c),
                    None => return Err("syntax error: missing '}'".into()),
                }
            }
            let param = braced(&inside).ok_or("syntax error: unsupported expansion")?;
            w.quoted |= quoted;
            w.parts.push(Part::Param { param, quoted });
            return Ok(());
        }
        Some('(' | '$' | '@' | '*' | '!' | '-') => return unsupported(),
        _ => {
            w.push_char('$', quoted);
            return Ok(());
        }
    };
    chars.next();
    w.quoted |= quoted;
    w.parts.push(Part::Param { param, quoted });
    Ok(())
}

/// `${NAME}` or `${N}`; any operator inside (`${X:-y}`, `${#X}`) is beyond the model.
fn braced(inside: &str) -> Option<Param> {
    let mut chars = inside.chars();
    match chars.next()? {
        '0'..='9' if inside.bytes().all(|b| b.is_ascii_digit()) => inside.parse().ok().map(Param::Positional),
        c if (c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Some(Param::Var(inside.to_string()))
        }
        _ => None,
    }
}

fn ends_with_redirect(word: &Word) -> bool {
    matches!(word.parts.last(), Some(Part::Text { text, quoted: false }) if text.ends_with('>') || text.ends_with('<'))
}

/// Whether `word` so far is a redirection's descriptor and operator (`2`, `>`, `2>`): a `>` or
/// `<` continues it.
fn is_operator_prefix(word: &Word) -> bool {
    matches!(word.bare(), Some(text) if text.trim_start_matches(|c: char| c.is_ascii_digit()).chars().all(|c| "<>&|".contains(c)))
}
