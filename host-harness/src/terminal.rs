//! Text from the user's files, arguments or plugins, made safe to print: a
//! terminal obeys control characters (escape sequences can rewrite the
//! screen, set the window title or hide text), and bidirectional controls
//! make text read differently from what it is. Each is shown as a Rust
//! escape (`\u{1b}`) instead.

use std::borrow::Cow;
use std::io::Write;

pub use lazy_tools::is_bidi_control;

/// `text` with every control character (newlines too: a value is one line), bidirectional
/// control and other [unprintable](is_unprintable) character escaped.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_except(text, |_| false)
}

/// A whole message of several lines: like [`escape`], but newlines stay.
pub fn escape_message(text: &str) -> Cow<'_, str> {
    escape_except(text, |c| c == '\n')
}

/// Whether `c` is one of Unicode's Default_Ignorable_Code_Point characters: characters that
/// display as nothing (zero-width space, word joiner, invisible operators, byte-order mark,
/// soft hyphen, Hangul fillers, variation selectors, tags, ...). A name holding one prints as
/// another name.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// Whether `c` may be written in a name: whitespace and what is shown escaped
/// ([`is_unprintable`]) may not, nor the variation selectors it shows as written; the joiners
/// (U+200C, U+200D) may, as scripts are written with them.
pub fn is_name_char(c: char) -> bool {
    !(c.is_whitespace() || is_unprintable(c) || is_variation_selector(c))
}

/// The variation selectors: they choose a glyph's form (emoji presentation, a CJK variant).
fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Whether `c` is shown escaped: control characters, bidirectional controls, the line and
/// paragraph separators (which some terminals and editors break lines at), and the characters
/// that display as nothing ([`is_default_ignorable`]), but for the joiners and the variation
/// selectors, which emoji and CJK text are written with (`❤️` is U+2764 U+FE0F).
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(c, '\u{2028}' | '\u{2029}')
        || (is_default_ignorable(c)
            && !matches!(c, '\u{200c}' | '\u{200d}')
            && !is_variation_selector(c))
}

fn escape_except(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_unprintable(c) && !keep(c);
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

/// `value` as JSON that is safe to print: serde_json escapes only U+0000 to U+001F, so the
/// other control characters (DEL, C1) and bidirectional controls in its strings are written
/// as `\uXXXX` too. The text is still JSON and reads back as the same value.
pub fn json(value: &impl serde::Serialize) -> serde_json::Result<String> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        PrintableJson,
    ))?;
    // The serializer writes only UTF-8: the value's strings and ASCII.
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// serde_json's compact formatter, escaping every control and bidirectional control.
struct PrintableJson;

impl serde_json::ser::Formatter for PrintableJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut shown = 0;
        for (at, c) in fragment.char_indices() {
            if is_unprintable(c) {
                writer.write_all(&fragment.as_bytes()[shown..at])?;
                for unit in c.encode_utf16(&mut [0; 2]) {
                    write!(writer, "\\u{unit:04x}")?;
                }
                shown = at + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[shown..])
    }
}

/// A writer that shows what it is given as [`escape_message`] does: for output made of many
/// values from files, servers and plugins (a session's replies), so that none is printed raw.
/// Bytes that are not UTF-8 are shown as U+FFFD; a character split across two writes is kept
/// until its end arrives.
pub struct Escaping<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> Escaping<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let (text, keep) = match std::str::from_utf8(&self.pending) {
            Ok(text) => (Cow::Borrowed(text), 0),
            // An incomplete character at the end: wait for the rest of it.
            Err(e) if e.error_len().is_none() => {
                let valid = e.valid_up_to();
                let text = std::str::from_utf8(&self.pending[..valid]).unwrap_or_default();
                (Cow::Borrowed(text), self.pending.len() - valid)
            }
            Err(_) => (String::from_utf8_lossy(&self.pending), 0),
        };
        self.inner.write_all(escape_message(&text).as_bytes())?;
        let written = self.pending.len() - keep;
        self.pending.drain(..written);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaping_writer_shows_every_value_it_is_given() {
        let mut shown = Vec::new();
        {
            let mut out = Escaping::new(&mut shown);
            let result = "red \u{1b}[31mtext\r forged";
            writeln!(out, "ok: {result}").unwrap();
            // A character split across two writes is written whole.
            let e_acute = "é".as_bytes();
            out.write_all(&e_acute[..1]).unwrap();
            out.write_all(&e_acute[1..]).unwrap();
            out.write_all(b"\xff\n").unwrap();
        }
        assert_eq!(
            String::from_utf8(shown).unwrap(),
            "ok: red \\u{1b}[31mtext\\r forged\né\u{fffd}\n"
        );
    }

    #[test]
    fn json_to_print_escapes_every_control_and_reads_back_the_same() {
        let text = "en\u{202e}\u{1b}[31mRED\u{9b}\u{85}\u{7f} é 語\n\"";
        let value = serde_json::json!({ text: [text] });
        let printed = json(&value).unwrap();
        assert_eq!(
            printed,
            r#"{"en\u202e\u001b[31mRED\u009b\u0085\u007f é 語\n\"":["en\u202e\u001b[31mRED\u009b\u0085\u007f é 語\n\""]}"#
        );
        let read: serde_json::Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(read, value);
    }

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

    /// A line separator breaks lines in some terminals; an invisible character makes two names
    /// print alike. Both show, in text and in JSON; a joiner inside an emoji stays.
    #[test]
    fn separators_and_invisible_characters_are_shown() {
        assert_eq!(
            escape_message("a\u{2028}b\u{2029}c\n"),
            "a\\u{2028}b\\u{2029}c\n"
        );
        assert_eq!(
            escape("echo\u{200b}\u{2060}\u{feff}\u{ad}"),
            "echo\\u{200b}\\u{2060}\\u{feff}\\u{ad}"
        );
        assert_eq!(escape("👩\u{200d}💻"), "👩\u{200d}💻");
        assert_eq!(
            escape("e\u{2062}c\u{34f}h\u{3164}o\u{e0020}\u{206a}"),
            "e\\u{2062}c\\u{34f}h\\u{3164}o\\u{e0020}\\u{206a}"
        );
        // Emoji and CJK variation selectors show as written.
        assert_eq!(
            escape("\u{2764}\u{fe0f} 葛\u{e0100}"),
            "\u{2764}\u{fe0f} 葛\u{e0100}"
        );
        // A name holds none of them, but for the joiners.
        for c in [
            '\u{200b}',
            '\u{206a}',
            '\u{fe00}',
            '\u{e0100}',
            '\u{ad}',
            ' ',
            '\u{1b}',
        ] {
            assert!(!is_name_char(c), "{c:?}");
        }
        for c in ['\u{200c}', '\u{200d}', 'é', '名', '-'] {
            assert!(is_name_char(c), "{c:?}");
        }
        assert_eq!(
            json(&serde_json::json!("echo\u{200b}\u{2028}")).unwrap(),
            r#""echo\u200b\u2028""#
        );
    }
}
