//! Text from the shell as the model reads it in a catalog line or a guard tool's result.
//! Server and group names, display names, descriptions and tool names come from MCP servers
//! and profiles: a line break, a carriage return or a bidirectional control in one would let
//! it forge a line the plugin never wrote (a catalog entry, another tool's schema), so each is
//! shown on one line and every line the model reads starts where the plugin started it.

use std::borrow::Cow;

/// Whether `c` is shown as a space: control characters (C0, DEL and C1: line feed, carriage
/// return, tab, VT, FF, ESC, NEL), the line and paragraph separators, and bidirectional
/// controls (they reorder what follows as a reader sees it).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Whether `c` ends a line: line feed, carriage return, VT, FF, NEL, and the line and
/// paragraph separators.
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `text` on one line: each [`is_unsafe`] character a space. Borrowed when there is none, so a
/// plain catalog is not copied.
pub fn one_line(text: &str) -> Cow<'_, str> {
    match text.find(is_unsafe) {
        None => Cow::Borrowed(text),
        Some(at) => {
            let mut line = String::with_capacity(text.len());
            line.push_str(&text[..at]);
            line.extend(
                text[at..]
                    .chars()
                    .map(|c| if is_unsafe(c) { ' ' } else { c }),
            );
            Cow::Owned(line)
        }
    }
}

/// Compact JSON text (serde_json's, with nothing outside its strings but punctuation) on one
/// line: serde_json escapes C0 controls in a string but leaves NEL, the separators and bidi
/// controls raw, so each [`is_unsafe`] character becomes its `\uXXXX` escape (all are in the
/// Basic Multilingual Plane), which means the same.
pub fn json_line(json: &str) -> Cow<'_, str> {
    match json.find(is_unsafe) {
        None => Cow::Borrowed(json),
        Some(at) => {
            let mut line = String::with_capacity(json.len() + 16);
            line.push_str(&json[..at]);
            for c in json[at..].chars() {
                if is_unsafe(c) {
                    line.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    line.push(c);
                }
            }
            Cow::Owned(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_controls_and_bidi_controls_become_spaces() {
        assert_eq!(one_line("plain text: (x) — y"), "plain text: (x) — y");
        assert!(matches!(one_line("plain"), Cow::Borrowed(_)));
        assert_eq!(
            one_line("a\nb\rc\u{0b}d\u{0c}e\u{85}f\u{2028}g\u{2029}h\ti\u{1b}[31mj"),
            "a b c d e f g h i [31mj"
        );
        assert_eq!(
            one_line("x\u{202e}y\u{2066}z\u{200f}w\u{061c}v"),
            "x y z w v"
        );
        // Other characters stay, whatever their script.
        assert_eq!(one_line("读取文件。é Ａ"), "读取文件。é Ａ");
    }

    #[test]
    fn json_stays_the_same_json_on_one_line() {
        let value = serde_json::json!({"d": "a\u{2028}b\u{85}c\u{202e}d\u{7f}e\nf"});
        let text = value.to_string();
        let line = json_line(&text);
        assert_eq!(line, r#"{"d":"a\u2028b\u0085c\u202ed\u007fe\nf"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            value
        );
        assert!(matches!(json_line(r#"{"a":"b"}"#), Cow::Borrowed(_)));
    }
}
