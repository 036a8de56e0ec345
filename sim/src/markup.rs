//! Escaping text for XML and HTML: the JUnit report (`sweep/junit.rs`) and the timeline page
//! (`timeline.rs`) write the same markup rules.

use std::fmt::Write as _;

/// `value` as element content, or with `in_attribute` as an attribute value (quoted with either
/// quote): markup characters as entities, whitespace that attribute normalisation would eat as
/// character references, and the control characters XML 1.0 cannot carry at all as U+FFFD.
pub fn escape(value: &str, in_attribute: bool) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\n' | '\r' | '\t' if in_attribute => {
                let _ = write!(escaped, "&#{};", u32::from(c));
            }
            // Carriage returns would be normalised away in content; keep them as references.
            '\r' => escaped.push_str("&#13;"),
            '\n' | '\t' => escaped.push(c),
            // XML 1.0 has no way to carry these, not even as character references.
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => escaped.push('\u{fffd}'),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_unwritable_characters_are_escaped() {
        let message = "a \"quoted\" <tag> & 'it' — ok\nnext\u{1}";
        assert_eq!(escape(message, false), "a &quot;quoted&quot; &lt;tag&gt; &amp; &apos;it&apos; — ok\nnext\u{fffd}");
        assert_eq!(escape("a\nb\tc\rd", true), "a&#10;b&#9;c&#13;d");
    }
}
