//! Text from the user's files, arguments or plugins, made safe to print: a
//! terminal obeys control characters (escape sequences can rewrite the
//! screen, set the window title or hide text), and bidirectional controls
//! make text read differently from what it is. Each is shown as a Rust
//! escape (`\u{1b}`) instead.

use std::borrow::Cow;

/// `text` with every control character (newlines too: a value is one line)
/// and bidirectional control escaped.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_except(text, |_| false)
}

/// A whole message of several lines: like [`escape`], but newlines stay.
pub fn escape_message(text: &str) -> Cow<'_, str> {
    escape_except(text, |c| c == '\n')
}

fn escape_except(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() || is_bidi_control(c)) && !keep(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// Unicode's explicit directional formatting characters (the "Trojan
/// Source" set).
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape("plain `x` é"), "plain `x` é");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\u{1b}]0;owned\u{7}b\nc\rd\u{9b}"),
            "a\\u{1b}]0;owned\\u{7}b\\nc\\rd\\u{9b}"
        );
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(escape_message("one\ntwo\u{1b}[2J"), "one\ntwo\\u{1b}[2J");
    }
}
