//! Initials: a request writes a service as capitals (`HN`, `OSM`) where its server's text
//! writes the name whole (`Hacker News`, `OpenStreetMap`). A server's text gives the initials
//! of the names it writes, as terms of the server's name that no word can be; a query word
//! written in capitals looks its letters up among them.

use crate::swar::{HIGH, in_range};

/// Marks an initials term: the analyser makes terms of letters, digits and CJK characters only,
/// so no word of any text is such a term, and a query word's prefix and typo matches, which
/// keep its first letter, never reach one.
const MARK: u8 = b'^';

/// Names of more words than this are not spelled out by their initials; a run of capitalised
/// words gives the initials of each of its parts of two to this many words.
const MAX_LETTERS: usize = 4;

/// Capitalised words held at once: a run reaching this is spelled, and goes on from its last
/// words (a part of it that they begin is spelled with the words that follow).
const MAX_RUN: usize = 16;

/// Initials read from one text at most: a heading in title case gives a few, a text of
/// nothing else gives no more than this.
const MAX_PER_TEXT: usize = 64;

/// The initials of a name, two to [`MAX_LETTERS`] letters, held as their index term (`^hn`):
/// an index build reads thousands of them, none on the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Initials {
    /// [`MARK`] and the letters, lowercase; `len` bytes of it are the term.
    term: [u8; 1 + MAX_LETTERS],
    len: u8,
}

impl Initials {
    /// The initials `letters` (ASCII letters, any case), or `None` if there are too few or
    /// too many of them.
    fn of(letters: &[u8]) -> Option<Self> {
        if !(2..=MAX_LETTERS).contains(&letters.len()) {
            return None;
        }
        let mut term = [MARK; 1 + MAX_LETTERS];
        for (to, from) in term[1..].iter_mut().zip(letters) {
            *to = from.to_ascii_lowercase();
        }
        Some(Self {
            term,
            len: 1 + letters.len() as u8,
        })
    }

    /// The index term: [`MARK`] and the letters, lowercase.
    pub fn term(&self) -> &str {
        // ASCII by construction (`of` takes ASCII letters).
        std::str::from_utf8(&self.term[..usize::from(self.len)]).unwrap_or_default()
    }

    /// The letters, lowercase: the term without its mark.
    pub fn letters(&self) -> &str {
        &self.term()[1..]
    }
}

/// The initials of the names `text` writes, each once: of every run of two to
/// [`MAX_LETTERS`] capitalised words inside a longer run of them (`Official Hacker News` ->
/// oh, ohn, hn), and of each camel-case word (`OpenStreetMap` -> osm, `GitHub` -> gh).
///
/// A word is a run of ASCII letters and digits; capitalised, it is a capital and lowercase
/// letters (`Hacker`, not `MCP` or `Web3`). Words join a run when only spaces are between
/// them: punctuation, a line's end, another word or any other character ends it. At most
/// [`MAX_PER_TEXT`] distinct initials, sorted.
pub fn of_names(text: &str) -> Vec<Initials> {
    let bytes = text.as_bytes();
    let mut out: Vec<Initials> = Vec::new();
    let mut run = Run::default();
    // Where the run's last word ends.
    let mut run_end = 0;
    let mut at = 0;
    while out.len() < MAX_PER_TEXT {
        // Only a word that begins with a capital can be part of a name.
        let Some(start) = next_capital(bytes, at) else {
            break;
        };
        let end = start
            + bytes[start..]
                .iter()
                .take_while(|b| is_word_byte(**b))
                .count();
        at = end;
        if start > 0 && is_word_byte(bytes[start - 1]) {
            continue; // inside a word (`iPhone`)
        }
        let word = &bytes[start..end];
        if is_capitalised(word) {
            let joins = run.len > 0 && bytes[run_end..start].iter().all(|&b| is_space(b));
            if !joins {
                run.spell(&mut out);
            }
            run.push(word[0], &mut out);
            run_end = end;
        } else if let Some(camel) = camel_initials(word) {
            add(&mut out, camel);
        }
    }
    run.spell(&mut out);
    out.sort_unstable();
    out
}

/// Adds `initials` to `out` unless it holds them: the bound counts distinct initials.
fn add(out: &mut Vec<Initials>, initials: Initials) {
    if out.len() < MAX_PER_TEXT && !out.contains(&initials) {
        out.push(initials);
    }
}

/// The words of a query written in capitals that may be initials: two to [`MAX_LETTERS`]
/// ASCII capitals, no other ASCII letter or digit next to them (`HN`, not `H2O` or `Hn`; a
/// Chinese request writes `在HN上`).
pub fn written(text: &str) -> impl Iterator<Item = Initials> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| word.bytes().all(|b| b.is_ascii_uppercase()))
        .filter_map(|word| Initials::of(word.as_bytes()))
}

/// Whether `b` goes between two words of one name: a space or a tab, not a line's end (a
/// heading does not run on into the next line).
fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Whether `b` is part of a word: an ASCII letter or digit. Names are spelled in ASCII here,
/// and a Chinese text writes them next to its own characters (`访问Hacker News的数据`).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// The first ASCII capital of `bytes` from `at`, skipping eight bytes at a time where none
/// is one (most of a text: this scan reads every server's description at an index build).
fn next_capital(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        // `in_range` reads ASCII bytes only: a chunk with another byte is read byte by byte.
        if (word & HIGH != 0 || in_range(word, b'A', b'Z') != 0)
            && let Some(i) = chunk.iter().position(u8::is_ascii_uppercase)
        {
            return Some(at + i);
        }
        at += 8;
    }
    bytes
        .get(at..)?
        .iter()
        .position(u8::is_ascii_uppercase)
        .map(|i| at + i)
}

/// `Hacker`, not `hacker`, `MCP`, `A` or `Web3`: an ASCII capital and lowercase letters.
fn is_capitalised(word: &[u8]) -> bool {
    word.len() > 1 && word[0].is_ascii_uppercase() && word[1..].iter().all(u8::is_ascii_lowercase)
}

/// The capitals of a word of two to [`MAX_LETTERS`] capitalised parts written together
/// (`OpenStreetMap`, `GitHub`); `None` for any other word (`MCP`, `HTTPServer`).
fn camel_initials(word: &[u8]) -> Option<Initials> {
    if !word.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut capitals = [0u8; MAX_LETTERS];
    let mut count = 0;
    for (i, &b) in word.iter().enumerate() {
        if !b.is_ascii_uppercase() {
            continue;
        }
        // Each capital begins a part of at least one lowercase letter.
        let part_has_letters = word.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if count == MAX_LETTERS || !part_has_letters {
            return None;
        }
        capitals[count] = b;
        count += 1;
    }
    word.first()
        .is_some_and(u8::is_ascii_uppercase)
        .then(|| Initials::of(&capitals[..count]))
        .flatten()
}

/// The first letters of a run of capitalised words, the last [`MAX_RUN`] of them.
#[derive(Default)]
struct Run {
    letters: [u8; MAX_RUN],
    len: usize,
}

impl Run {
    /// Adds a word's first letter. A run this long is a heading, not a name: its parts are
    /// spelled as it goes, and it goes on from its last words.
    fn push(&mut self, letter: u8, out: &mut Vec<Initials>) {
        if self.len == MAX_RUN {
            let keep = MAX_LETTERS - 1;
            self.spell(out);
            self.letters.copy_within(MAX_RUN - keep.., 0);
            self.len = keep;
        }
        self.letters[self.len] = letter;
        self.len += 1;
    }

    /// Adds the initials of every part of two to [`MAX_LETTERS`] of its words to `out`, and
    /// empties it.
    fn spell(&mut self, out: &mut Vec<Initials>) {
        let run = &self.letters[..self.len];
        for letters in 2..=run.len().min(MAX_LETTERS) {
            for part in run.windows(letters) {
                if let Some(initials) = Initials::of(part) {
                    add(out, initials);
                }
            }
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The letters of each of `text`'s initials.
    fn letters(text: &str) -> Vec<String> {
        of_names(text)
            .iter()
            .map(|initials| initials.letters().to_string())
            .collect()
    }

    /// The letters of each word of a query `written` reads as initials.
    fn written_letters(text: &str) -> Vec<String> {
        written(text)
            .map(|initials| initials.letters().to_string())
            .collect()
    }

    /// [`of_names`]'s letters read word by word, without skipping: what it must find.
    fn by_words(text: &str) -> Vec<String> {
        // Each maximal run of ASCII letters and digits, by characters.
        let mut words: Vec<std::ops::Range<usize>> = Vec::new();
        for (at, c) in text.char_indices() {
            match words.last_mut() {
                Some(word) if c.is_ascii_alphanumeric() && word.end == at => word.end += 1,
                _ if c.is_ascii_alphanumeric() => words.push(at..at + 1),
                _ => {}
            }
        }
        let mut out: Vec<String> = Vec::new();
        let mut run = String::new();
        let spell = |run: &mut String, out: &mut Vec<String>| {
            for length in 2..=run.len().min(MAX_LETTERS) {
                for start in 0..=run.len() - length {
                    out.push(run[start..start + length].to_string());
                }
            }
            run.clear();
        };
        let mut previous: Option<(usize, bool)> = None;
        for word in words {
            let (start, end) = (word.start, word.end);
            let word = &text[word];
            let capitalised = word.len() > 1
                && word.starts_with(|c: char| c.is_ascii_uppercase())
                && word[1..].chars().all(|c| c.is_ascii_lowercase());
            let joins = previous.is_some_and(|(end, capitalised)| {
                capitalised && text[end..start].chars().all(|c| c == ' ' || c == '\t')
            });
            if !joins {
                spell(&mut run, &mut out);
            }
            if capitalised {
                run.push(word.chars().next().unwrap_or_default().to_ascii_lowercase());
            } else if word.chars().all(|c| c.is_ascii_alphabetic())
                && word.starts_with(|c: char| c.is_ascii_uppercase())
            {
                // Camel case: capitalised parts written together.
                let capitals: String = word.chars().filter(char::is_ascii_uppercase).collect();
                let each_part_has_letters = word
                    .char_indices()
                    .filter(|(_, c)| c.is_ascii_uppercase())
                    .all(|(i, _)| word[i + 1..].starts_with(|c: char| c.is_ascii_lowercase()));
                if (2..=MAX_LETTERS).contains(&capitals.len()) && each_part_has_letters {
                    out.push(capitals.to_lowercase());
                }
            }
            previous = Some((end, capitalised));
        }
        spell(&mut run, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    proptest! {
        #[test]
        fn skipping_to_capitals_finds_what_a_reading_by_words_finds(
            pieces in prop::collection::vec((0usize..17, 0usize..9), 0..12),
        ) {
            const WORDS: [&str; 17] = [
                "Hacker", "News", "Open", "StreetMap", "OpenStreetMap", "iPhone", "MCP", "the",
                "Web3", "Café", "中文", "GitHub", "A", "x", "lowercase", "Amazon", "Zoom",
            ];
            const BETWEEN: [&str; 9] = [" ", "  ", ". ", "(", ")", "\n", ", ", "", "-"];
            let text: String = pieces
                .iter()
                .map(|&(word, between)| format!("{}{}", WORDS[word], BETWEEN[between]))
                .collect();
            prop_assert_eq!(letters(&text), by_words(&text), "{:?}", text);
        }
    }

    #[test]
    fn a_run_of_capitalised_words_gives_the_initials_of_each_of_its_parts() {
        assert_eq!(
            letters("Official Hacker News MCP Server: stories."),
            ["hn", "oh", "ohn"]
        );
        assert_eq!(letters("Access the Hacker News API"), ["hn"]);
    }

    #[test]
    fn a_run_longer_than_the_words_held_at_once_is_spelled_whole() {
        let words = [
            "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India",
            "Juliet", "Kilo", "Lima", "Mike", "November", "Oscar", "Papa", "Quebec", "Romeo",
            "Sierra", "Tango",
        ];
        let text = words.join(" ");
        // 19 + 18 + 17 parts of two, three and four words, fewer than the bound.
        assert_eq!(letters(&text).len(), 54);
        assert_eq!(letters(&text), by_words(&text));
    }

    #[test]
    fn the_bound_counts_distinct_initials() {
        let text = format!("{}OpenStreetMap", "Hacker News. ".repeat(100));
        assert_eq!(letters(&text), ["hn", "osm"]);
    }

    #[test]
    fn a_camel_case_word_gives_its_capitals() {
        assert_eq!(letters("An OpenStreetMap server"), ["osm"]);
        assert_eq!(
            letters("GitHub, iPhone, MCP, HTTPServer, OneTwoThreeFourFive"),
            ["gh"]
        );
    }

    #[test]
    fn a_name_written_next_to_chinese_characters_is_read() {
        assert_eq!(letters("访问Hacker News的数据"), ["hn"]);
        assert_eq!(written_letters("在HN上看看，OSM地图"), ["hn", "osm"]);
    }

    #[test]
    fn punctuation_and_lowercase_words_end_a_run() {
        // `News.` ends its run: `Search` starts another, alone.
        assert_eq!(letters("Hacker News. Search it"), ["hn"]);
        assert_eq!(letters("Hacker (News)"), Vec::<String>::new());
        assert_eq!(letters("Get User\nSearch Web"), ["gu", "sw"]);
        assert_eq!(letters("plain text, no names"), Vec::<String>::new());
    }

    #[test]
    fn a_text_gives_a_bounded_number_of_initials() {
        // A heading of five words repeated: each part of two to four of them, once.
        let heading = "Alpha Beta Gamma Delta Epsilon ".repeat(1000);
        assert_eq!(of_names(&heading).len(), 3 * 5);
        // 676 distinct camel-case words: no more than the bound are kept.
        let camels: String = (b'A'..=b'Z')
            .flat_map(|x| (b'A'..=b'Z').map(move |y| format!("{}a{}b ", x as char, y as char)))
            .collect();
        assert_eq!(of_names(&camels).len(), MAX_PER_TEXT);
    }

    #[test]
    fn only_words_in_capitals_are_read_as_initials() {
        assert_eq!(
            written_letters("posts on HN, OSM-tiles; Hn hn H2O A ABCDE"),
            ["hn", "osm"]
        );
    }

    #[test]
    fn an_initials_term_is_no_word() {
        let hn = written("HN")
            .next()
            .map(|initials| initials.term().to_string());
        assert_eq!(hn.as_deref(), Some("^hn"));
        let tokens = crate::search::analyze::analyzer().tokens("^hn ^HN");
        assert!(tokens.iter().all(|t| t.term == "hn"), "{tokens:?}");
    }
}
