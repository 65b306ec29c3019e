//! Words of a query that are data, not intent: file paths, file names, URLs and quoted literal
//! values (`read /root/excel/Sales.xlsx`, `open https://example.com/a`, `the 'Publish' button`).
//! They name what a tool works on, not what it does, so a query reads them at a lower weight;
//! a file's extension stays a word of intent (`xlsx` says which kind of tool).

use std::ops::Range;

/// A quoted value longer than this is a sentence of the request, not a literal.
const MAX_QUOTED_CHARS: usize = 60;
/// A file extension: 2 to 5 ASCII letters or digits, the first a letter.
const MAX_EXTENSION_CHARS: usize = 5;

/// A query split into its words of intent and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The query with every data span blanked out (same byte offsets).
    pub intent: String,
    /// The data spans, separated by spaces.
    pub data: String,
}

/// Splits `text` into intent and data. When nothing but data is left (a query that is only
/// a quoted phrase or a path), all of it is intent.
pub fn split(text: &str) -> Split {
    let spans = data_spans(text);
    if spans.is_empty() {
        return Split {
            intent: text.to_string(),
            data: String::new(),
        };
    }
    let mut intent = String::with_capacity(text.len());
    let mut data = String::new();
    let mut at = 0;
    for span in &spans {
        intent.push_str(&text[at..span.start]);
        intent.extend(std::iter::repeat_n(' ', span.len()));
        data.push_str(&text[span.clone()]);
        data.push(' ');
        at = span.end;
    }
    intent.push_str(&text[at..]);
    if !intent.chars().any(char::is_alphanumeric) {
        return Split {
            intent: text.to_string(),
            data: String::new(),
        };
    }
    Split { intent, data }
}

/// Byte ranges of `text` that are data, in order, not overlapping.
pub fn data_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = quoted(text);
    for chunk in chunks(text) {
        if spans
            .iter()
            .any(|s| s.start < chunk.end && chunk.start < s.end)
        {
            continue;
        }
        if let Some(span) = path_or_url(text, chunk) {
            spans.push(span);
        }
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// Runs of text between whitespace, without the punctuation that ends a sentence around them.
fn chunks(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    text.split_whitespace().map(move |chunk| {
        // `split_whitespace` yields slices of `text`: the offset is the pointers' distance.
        let start = chunk.as_ptr() as usize - text.as_ptr() as usize;
        let trimmed_start = chunk.trim_start_matches(['(', '[', '<', '"', '\'', '`']);
        let trimmed = trimmed_start
            .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '>', '"', '\'', '`']);
        let start = start + (chunk.len() - trimmed_start.len());
        start..start + trimmed.len()
    })
}

/// The data part of a chunk that is a URL, a path or a file name: all of it, except a file
/// name's extension at its end.
fn path_or_url(text: &str, chunk: Range<usize>) -> Option<Range<usize>> {
    let word = &text[chunk.clone()];
    if word.is_empty() {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("www.") {
        return Some(chunk);
    }
    let slashes = word.matches(['/', '\\']).count();
    let rooted = word.starts_with(['/', '\\', '~', '.'])
        || word.as_bytes().get(1..3) == Some(b":\\".as_slice());
    let extension = extension(word);
    // `and/or`, `TCP/IP`, `lat/long`: one slash and no file name is a word pair, not a path.
    let path = slashes > 0 && (rooted || slashes >= 2 || extension.is_some());
    let file_name = slashes == 0 && extension.is_some();
    if !path && !file_name {
        return None;
    }
    match extension {
        Some(length) => Some(chunk.start..chunk.end - length),
        None => Some(chunk),
    }
}

/// The length of `word`'s file extension with its dot (`.xlsx`), if it ends in one after a
/// name: 2 to 5 ASCII letters or digits, the first a letter.
fn extension(word: &str) -> Option<usize> {
    let dot = word.rfind('.')?;
    let (name, ext) = (&word[..dot], &word[dot + 1..]);
    let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let valid = (2..=MAX_EXTENSION_CHARS).contains(&ext.len())
        && ext.starts_with(|c: char| c.is_ascii_alphabetic())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && name.chars().any(char::is_alphanumeric);
    valid.then_some(ext.len() + 1)
}

/// Quoted values: '...', "...", `...`, ‘...’ and “...”, opened after a space or the start and
/// closed before a space, punctuation or the end (an apostrophe inside a word opens nothing).
fn quoted(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut previous: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        let close = match c {
            '\'' => '\'',
            '"' => '"',
            '`' => '`',
            '‘' => '’',
            '“' => '”',
            _ => {
                previous = Some(c);
                continue;
            }
        };
        if previous.is_some_and(char::is_alphanumeric) {
            previous = Some(c);
            continue;
        }
        let start = i + c.len_utf8();
        let end = text[start..].char_indices().find_map(|(j, d)| {
            let after = text[start + j + d.len_utf8()..].chars().next();
            (d == close && j > 0 && !after.is_some_and(char::is_alphanumeric)).then_some(start + j)
        });
        // A quote does not run over a line: a line is a request of its own.
        let end = end.filter(|&end| !text[start..end].contains('\n'));
        match end {
            Some(end) if text[start..end].chars().count() <= MAX_QUOTED_CHARS => {
                spans.push(start..end);
                // Skip past the closing quote.
                while chars.peek().is_some_and(|&(k, _)| k <= end) {
                    chars.next();
                }
                previous = Some(close);
            }
            _ => previous = Some(c),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(text: &str) -> Vec<&str> {
        data_spans(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn paths_urls_and_file_names_are_data_but_not_their_extension() {
        assert_eq!(
            data("Read /root/excel/Local_Sales.xlsx, then plot it"),
            ["/root/excel/Local_Sales"]
        );
        assert_eq!(
            data("summarise https://www.youtube.com/watch?v=arj7 please"),
            ["https://www.youtube.com/watch?v=arj7"]
        );
        assert_eq!(
            data("insert clock.png under ~/picture"),
            ["clock", "~/picture"]
        );
        assert_eq!(data(r"open C:\Users\me\notes.txt"), [r"C:\Users\me\notes"]);
        assert_eq!(data("docs/intro.md"), ["docs/intro"]);
    }

    #[test]
    fn word_pairs_versions_and_abbreviations_are_not_paths() {
        for text in [
            "read and/or write",
            "TCP/IP settings",
            "lat/long of a place",
            "version 1.2.3",
            "e.g. a file",
            "it is 8.8.8.8",
            "Mr. Smith",
        ] {
            assert!(data(text).is_empty(), "{text}: {:?}", data(text));
        }
    }

    #[test]
    fn quoted_values_are_data_and_apostrophes_are_not_quotes() {
        assert_eq!(data("articles about 'MCP' on arXiv"), ["MCP"]);
        assert_eq!(
            data("the “Publish” button and a \"create post\" page"),
            ["Publish", "create post"]
        );
        assert!(data("Sheryl Meyers's email, what's today's news").is_empty());
        assert_eq!(data("don't read 'x y' now"), ["x y"]);
    }

    #[test]
    fn a_query_of_data_only_is_all_intent() {
        let only = split("\"convert pdf to text\"");
        assert_eq!(only.intent, "\"convert pdf to text\"");
        assert!(only.data.is_empty());
        let both = split("read /tmp/a.csv now");
        assert_eq!(both.intent, "read       .csv now");
        assert_eq!(both.data, "/tmp/a ");
    }
}
