//! The YAML pre-scan: libyaml's tokenizing rules, followed only as far as counting open flow
//! collections and directives needs.

use super::*;

/// Refuse a YAML body that would make libyaml work more than linearly: more than [`MAX_DEPTH`]
/// flow collections (`[`, `{`) open at once, or more than [`MAX_YAML_DIRECTIVES`] directives.
///
/// *Guarantees*: one pass, constant work per byte (plus the indentation stack). It follows
/// libyaml's scanner decision for decision (token starts, quoted, plain and block scalars and
/// where each ends, comments, indentation, simple keys), so its count of open flow collections
/// is libyaml's at every point libyaml reaches without an error: every body libyaml would nest
/// past [`MAX_DEPTH`] is refused, and a body refused that libyaml would not nest so deep has a
/// syntax error before (refused anyway). Its flow tokens were checked against those of
/// unsafe-libyaml's scanner on 5 million generated and mutated documents: none differed.
pub fn check_yaml(text: &[u8]) -> Result<(), DecodeError> {
    FlowScan::new(text, MAX_DEPTH).run()
}

/// Where a token started (libyaml's `yaml_mark_t`): byte offset, line, column in characters.
#[derive(Clone, Copy, Debug)]
struct Mark {
    index: usize,
    line: usize,
    column: usize,
}

/// libyaml's scanner state, as much of it as decides where tokens start and end.
pub(super) struct FlowScan<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
    column: usize,
    /// Open flow collections, and how many may be.
    flow: usize,
    limit: usize,
    directives: usize,
    /// The column of the innermost block collection (-1: none), and of those around it.
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    /// The possible simple key of the block context (flow level 0), if any.
    key: Option<Mark>,
}

/// `IS_BREAK`: CR LF, CR, LF, NEL, LS, PS. The length of the break at `i`, 0 if none.
fn break_len(text: &[u8], i: usize) -> usize {
    match text.get(i..) {
        Some([b'\r', b'\n', ..]) => 2,
        Some([b'\r' | b'\n', ..]) => 1,
        Some([0xC2, 0x85, ..]) => 2,
        Some([0xE2, 0x80, 0xA8 | 0xA9, ..]) => 3,
        _ => 0,
    }
}

/// `IS_ALPHA`: what anchors, aliases and tag handles are made of.
fn is_alpha(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// What a tag's URI may hold (`,`, `[` and `]` only in a verbatim tag `!<...>`).
fn is_uri(byte: u8, verbatim: bool) -> bool {
    is_alpha(byte) || b";/?:@&=+$.%!~*'()".contains(&byte) || (verbatim && b",[]".contains(&byte))
}

impl<'a> FlowScan<'a> {
    pub(super) fn new(text: &'a [u8], limit: usize) -> Self {
        FlowScan {
            text,
            pos: 0,
            line: 0,
            column: 0,
            flow: 0,
            limit,
            directives: 0,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: true,
            key: None,
        }
    }

    // Looking.

    fn byte(&self, offset: usize) -> Option<u8> {
        self.text.get(self.pos + offset).copied()
    }

    fn at(&self, byte: u8) -> bool {
        self.byte(0) == Some(byte)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn is_break(&self) -> bool {
        break_len(self.text, self.pos) > 0
    }

    fn is_blank_at(&self, offset: usize) -> bool {
        matches!(self.byte(offset), Some(b' ' | b'\t'))
    }

    /// `IS_BLANKZ_AT`: a blank, a break or the end.
    fn is_blankz_at(&self, offset: usize) -> bool {
        let i = self.pos + offset;
        i >= self.text.len() || self.is_blank_at(offset) || break_len(self.text, i) > 0
    }

    /// `---` or `...` at the start of a line, followed by a blank, a break or the end.
    fn at_document_indicator(&self) -> bool {
        let rest = &self.text[self.pos.min(self.text.len())..];
        self.column == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) && self.is_blankz_at(3)
    }

    fn mark(&self) -> Mark {
        Mark { index: self.pos, line: self.line, column: self.column }
    }

    // Moving.

    /// One character that is not a line break (`SKIP`).
    fn skip(&mut self) {
        let width = match self.byte(0) {
            Some(0xC0..=0xDF) => 2,
            Some(0xE0..=0xEF) => 3,
            Some(0xF0..=0xF7) => 4,
            _ => 1,
        };
        self.pos = (self.pos + width).min(self.text.len());
        self.column += 1;
    }

    /// One line break (`SKIP_LINE`).
    fn skip_line(&mut self) {
        self.pos += break_len(self.text, self.pos);
        self.line += 1;
        self.column = 0;
    }

    /// One character, a line break or not.
    fn step(&mut self) {
        if self.is_break() { self.skip_line() } else { self.skip() }
    }

    fn skip_to_break(&mut self) {
        while !self.at_end() && !self.is_break() {
            self.skip();
        }
    }

    // libyaml's bookkeeping.

    fn roll_indent(&mut self, column: usize) {
        let column = column as isize;
        if self.flow == 0 && self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
        }
    }

    fn unroll_indent(&mut self, column: isize) {
        while self.flow == 0 && self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    /// `yaml_parser_save_simple_key`; only the block context's key matters here.
    fn save_simple_key(&mut self) {
        if self.simple_key_allowed && self.flow == 0 {
            self.key = Some(self.mark());
        }
    }

    fn remove_simple_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    // Scanning.

    pub(super) fn run(mut self) -> Result<(), DecodeError> {
        loop {
            self.scan_to_next_token();
            self.unroll_indent(self.column as isize);
            if self.at_end() {
                return Ok(());
            }
            self.fetch_next_token()?;
        }
    }

    /// `yaml_parser_scan_to_next_token`: blanks, comments and line breaks.
    fn scan_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.text[self.pos.min(self.text.len())..].starts_with(b"\xEF\xBB\xBF") {
                self.pos += 3;
                self.column += 1;
            }
            while self.at(b' ') || ((self.flow > 0 || !self.simple_key_allowed) && self.at(b'\t')) {
                self.skip();
            }
            if self.at(b'#') {
                self.skip_to_break();
            }
            if !self.is_break() {
                return;
            }
            self.skip_line();
            if self.flow == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    /// `yaml_parser_fetch_next_token`, for a token that starts here. A character libyaml refuses
    /// (it stops there) is stepped over.
    fn fetch_next_token(&mut self) -> Result<(), DecodeError> {
        let in_flow = self.flow > 0;
        let Some(c) = self.byte(0) else { return Ok(()) };
        if self.column == 0 && c == b'%' {
            return self.directive();
        }
        if self.at_document_indicator() {
            self.unroll_indent(-1);
            self.remove_simple_key();
            self.simple_key_allowed = false;
            (0..3).for_each(|_| self.skip());
            return Ok(());
        }
        match c {
            b'[' | b'{' => return self.flow_start(),
            b']' | b'}' => self.flow_end(),
            b',' => self.indicator(true),
            b'-' if self.is_blankz_at(1) => self.block_indicator(true),
            b'?' if in_flow || self.is_blankz_at(1) => self.block_indicator(!in_flow),
            b':' if in_flow || self.is_blankz_at(1) => self.value(),
            b'*' | b'&' => self.anchor(),
            b'!' => self.tag(),
            b'|' | b'>' if !in_flow => self.block_scalar(),
            b'\'' | b'"' => self.quoted(c),
            _ if self.plain_starts(c) => self.plain(),
            _ => self.skip(),
        }
        Ok(())
    }

    fn directive(&mut self) -> Result<(), DecodeError> {
        self.directives += 1;
        if self.directives > MAX_YAML_DIRECTIVES {
            return Err(DecodeError::TooManyDirectives);
        }
        self.unroll_indent(-1);
        self.remove_simple_key();
        self.simple_key_allowed = false;
        self.skip_to_break();
        Ok(())
    }

    fn flow_start(&mut self) -> Result<(), DecodeError> {
        self.save_simple_key();
        self.flow += 1;
        if self.flow > self.limit {
            return Err(DecodeError::TooDeep);
        }
        self.simple_key_allowed = true;
        self.skip();
        Ok(())
    }

    fn flow_end(&mut self) {
        self.remove_simple_key();
        self.flow = self.flow.saturating_sub(1);
        self.simple_key_allowed = false;
        self.skip();
    }

    /// `,` (and the part of `-` and `?` that does not depend on the context).
    fn indicator(&mut self, then_allowed: bool) {
        self.remove_simple_key();
        self.simple_key_allowed = then_allowed;
        self.skip();
    }

    /// `-` or `?`: in the block context, a block collection may start at this column.
    fn block_indicator(&mut self, then_allowed: bool) {
        self.roll_indent(self.column);
        self.indicator(then_allowed);
    }

    /// `:`: a block mapping starts at its simple key's column (or here, without one).
    fn value(&mut self) {
        if self.flow == 0 {
            let here = self.mark();
            let fresh = |key: &Mark| key.line == here.line && key.index + 1024 >= here.index;
            if let Some(key) = self.key.take().filter(fresh) {
                self.roll_indent(key.column);
                self.simple_key_allowed = false;
            } else {
                self.roll_indent(self.column);
                self.simple_key_allowed = true;
            }
        } else {
            self.simple_key_allowed = false;
        }
        self.skip();
    }

    fn anchor(&mut self) {
        self.save_simple_key();
        self.simple_key_allowed = false;
        self.skip();
        while self.byte(0).is_some_and(is_alpha) {
            self.skip();
        }
    }

    /// A tag: `!<uri>`, or `!` and a run of URI characters (handle and suffix).
    fn tag(&mut self) {
        self.save_simple_key();
        self.simple_key_allowed = false;
        let verbatim = self.byte(1) == Some(b'<');
        (0..if verbatim { 2 } else { 1 }).for_each(|_| self.skip());
        while self.byte(0).is_some_and(|b| is_uri(b, verbatim)) {
            self.skip();
        }
        if verbatim && self.at(b'>') {
            self.skip();
        }
    }

    /// Whether a plain scalar starts here (libyaml's condition).
    fn plain_starts(&self, c: u8) -> bool {
        let indicator = self.is_blankz_at(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c);
        !indicator
            || (c == b'-' && !self.is_blank_at(1))
            || (self.flow == 0 && (c == b'?' || c == b':') && !self.is_blankz_at(1))
    }

    /// A single- or double-quoted scalar, to its closing quote.
    fn quoted(&mut self, quote: u8) {
        self.save_simple_key();
        self.simple_key_allowed = false;
        self.skip();
        while let Some(c) = self.byte(0) {
            match (quote, c) {
                (b'\'', b'\'') if self.byte(1) == Some(b'\'') => (0..2).for_each(|_| self.skip()),
                (b'"', b'\\') => {
                    self.skip();
                    if !self.at_end() {
                        self.step();
                    }
                }
                _ if c == quote => return self.skip(),
                _ => self.step(),
            }
        }
    }

    /// A plain scalar: to `: `, ` #`, a flow indicator (in the flow context), a document
    /// indicator, or a line indented no more than the block it is in.
    fn plain(&mut self) {
        self.save_simple_key();
        self.simple_key_allowed = false;
        let indent = self.indent + 1;
        let mut leading_blanks = false;
        while !self.at_document_indicator() && !self.at(b'#') {
            if !self.plain_chunk() || !(self.is_blank_at(0) || self.is_break()) {
                break;
            }
            while self.is_blank_at(0) || self.is_break() {
                leading_blanks |= self.is_break();
                self.step();
            }
            if self.flow == 0 && (self.column as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
    }

    /// The non-blank characters of a plain scalar; false where libyaml reports an error.
    fn plain_chunk(&mut self) -> bool {
        while !self.is_blankz_at(0) {
            let (c, next) = (self.byte(0), self.byte(1));
            let flow_indicator = |b: Option<u8>| b.is_some_and(|b| b",[]{}".contains(&b));
            if self.flow > 0 && c == Some(b':') && (flow_indicator(next) || next == Some(b'?')) {
                return false;
            }
            if (c == Some(b':') && self.is_blankz_at(1)) || (self.flow > 0 && flow_indicator(c)) {
                return true;
            }
            self.skip();
        }
        true
    }

    /// `|` or `>`: the header, then every line indented at least as the scalar's indentation.
    fn block_scalar(&mut self) {
        self.remove_simple_key();
        self.simple_key_allowed = true;
        self.skip();
        let Some(increment) = self.block_scalar_header() else { return };
        let mut indent = match increment {
            0 => 0,
            n if self.indent >= 0 => self.indent + n,
            n => n,
        };
        if !self.block_scalar_breaks(&mut indent) {
            return;
        }
        while self.column as isize == indent && !self.at_end() {
            self.skip_to_break();
            if self.is_break() {
                self.skip_line();
            }
            if !self.block_scalar_breaks(&mut indent) {
                return;
            }
        }
    }

    /// The chomping and indentation indicators, a comment, and the line break: the indentation
    /// indicator (0: none), or `None` where libyaml reports an error.
    fn block_scalar_header(&mut self) -> Option<isize> {
        let digit = |s: &Self| s.byte(0).filter(u8::is_ascii_digit).map(|d| isize::from(d - b'0'));
        let chomping = |s: &Self| s.at(b'+') || s.at(b'-');
        let mut increment = 0;
        if chomping(self) {
            self.skip();
            if let Some(d) = digit(self) {
                increment = (d > 0).then_some(d)?;
                self.skip();
            }
        } else if let Some(d) = digit(self) {
            increment = (d > 0).then_some(d)?;
            self.skip();
            if chomping(self) {
                self.skip();
            }
        }
        while self.is_blank_at(0) {
            self.skip();
        }
        if self.at(b'#') {
            self.skip_to_break();
        }
        if !self.at_end() && !self.is_break() {
            return None;
        }
        if self.is_break() {
            self.skip_line();
        }
        Some(increment)
    }

    /// `yaml_parser_scan_block_scalar_breaks`: empty lines and the indentation of the next;
    /// settles an undetermined `indent`. False where libyaml reports an error.
    fn block_scalar_breaks(&mut self, indent: &mut isize) -> bool {
        let mut max_indent = 0;
        loop {
            let short = |s: &Self, indent: isize| indent == 0 || (s.column as isize) < indent;
            while short(self, *indent) && self.at(b' ') {
                self.skip();
            }
            max_indent = max_indent.max(self.column as isize);
            if short(self, *indent) && self.at(b'\t') {
                return false;
            }
            if !self.is_break() {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        true
    }
}
