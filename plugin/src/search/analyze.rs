//! Text to search terms, the same way for tools and for queries.
//!
//! - Latin text: words split on anything that is not a letter or digit, then at camelCase humps
//!   and letter/digit boundaries (`getBaziDetail` -> get, bazi, detail); a word that splits is
//!   also kept whole (`YouTube` -> you, tube, youtube) so brand names match either way. Words are
//!   lowercased, English stop words and one-letter words are dropped, and the rest are
//!   Snowball-stemmed.
//! - CJK text has no spaces between words: each run is indexed as unigrams and bigrams, except
//!   Chinese stop words.

use std::ops::Range;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashSet;

use crate::swar::{HIGH, in_range};

/// One piece of text before stop words and stemming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A lowercase Latin word or word piece; `whole` for a word that also split into pieces.
    Word { lower: &'a str, whole: bool },
    /// A CJK unigram or bigram.
    Cjk { gram: &'a str, bigram: bool },
}

/// Receives the pieces of a text in order. Any `FnMut(Piece)` is one; an index build's own
/// sink inlines its method into every place a piece is found: in the component, a call per
/// piece also checks the epoch deadline at its entry.
pub trait PieceSink {
    fn piece(&mut self, piece: Piece<'_>);
}

impl<F: FnMut(Piece<'_>)> PieceSink for F {
    fn piece(&mut self, piece: Piece<'_>) {
        self(piece)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Word,
    WholeWord,
    CjkUnigram,
    CjkBigram,
}

/// A term as indexed, with what it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Stemmed for words, the characters themselves for CJK grams.
    pub term: String,
    pub kind: TokenKind,
    /// For words, the lowercase word before stemming.
    pub raw: String,
}

pub struct Analyzer {
    stemmer: Stemmer,
    english_stop: FxHashSet<&'static str>,
    chinese_stop: FxHashSet<&'static str>,
    catalog_stop: FxHashSet<&'static str>,
}

/// Words that only frame a request to a tool catalog ("server: ... platform, tool: ...",
/// "please help me use"): every entry is some service's tool, so these tell tools apart by
/// noise only.
const CATALOG_STOP_WORDS: &[&str] = &[
    "tool",
    "tools",
    "server",
    "servers",
    "service",
    "services",
    "platform",
    "platforms",
    "mcp",
    "please",
    "help",
    "want",
    "need",
    "would",
    "could",
    "also",
    "let",
    "via",
    "using",
    "use",
    "etc",
    "like",
];

/// Longer words are indexed as written, not stemmed: the Snowball stemmer takes time
/// quadratic in a word's length (one 300 KB word `ayay...` took 3.5 s), and no English word a
/// stem could match is this long (the longest in dictionaries have 45 letters).
pub const MAX_STEMMED_BYTES: usize = 64;

/// What the analyzer did, counted for tests that bound the work of hostile text.
#[cfg(test)]
pub(super) mod work {
    use std::cell::Cell;

    thread_local! {
        /// Bytes of words given to the stemmer.
        pub static STEMMED_BYTES: Cell<usize> = const { Cell::new(0) };
    }
}

static ANALYZER: LazyLock<Analyzer> = LazyLock::new(Analyzer::new);

/// The analyzer every index and query uses.
pub fn analyzer() -> &'static Analyzer {
    &ANALYZER
}

impl Analyzer {
    fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            english_stop: stop_words("en"),
            chinese_stop: stop_words("zh"),
            catalog_stop: CATALOG_STOP_WORDS.iter().copied().collect(),
        }
    }

    /// The terms of `text` with their kinds, in order.
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.for_each_piece(text, |piece| match piece {
            Piece::Word { lower, whole } => {
                if let Some(term) = self.word_term(lower) {
                    out.push(Token {
                        term,
                        kind: if whole {
                            TokenKind::WholeWord
                        } else {
                            TokenKind::Word
                        },
                        raw: lower.to_string(),
                    });
                }
            }
            Piece::Cjk { gram, bigram } => {
                if self.keeps_cjk(gram) {
                    out.push(Token {
                        term: gram.to_string(),
                        kind: if bigram {
                            TokenKind::CjkBigram
                        } else {
                            TokenKind::CjkUnigram
                        },
                        raw: String::new(),
                    });
                }
            }
        });
        out
    }

    /// The index term of a lowercase word: `None` for a stop word, else its stem (words with
    /// digits, and words longer than [`MAX_STEMMED_BYTES`], are kept as they are).
    pub fn word_term(&self, lower: &str) -> Option<String> {
        if self.is_stop_word(lower) {
            return None;
        }
        Some(
            if lower.len() <= MAX_STEMMED_BYTES && lower.chars().all(char::is_alphabetic) {
                #[cfg(test)]
                work::STEMMED_BYTES.with(|bytes| bytes.set(bytes.get() + lower.len()));
                self.stemmer.stem(lower).into_owned()
            } else {
                lower.to_string()
            },
        )
    }

    /// True for a lowercase word that carries no meaning for search.
    pub fn is_stop_word(&self, lower: &str) -> bool {
        lower.chars().nth(1).is_none()
            || self.english_stop.contains(lower)
            || self.catalog_stop.contains(lower)
    }

    /// False for a CJK gram that is a Chinese stop word.
    pub fn keeps_cjk(&self, gram: &str) -> bool {
        !self.chinese_stop.contains(gram)
    }

    /// Calls `f` with each piece of `text` in order, reusing buffers (index builds call this for
    /// every field of every tool).
    pub fn for_each_piece(&self, text: &str, f: impl FnMut(Piece<'_>)) {
        self.for_each_piece_in(&mut Scratch::default(), text, f)
    }

    /// [`Analyzer::for_each_piece`] with buffers the caller keeps from text to text.
    pub fn for_each_piece_in(&self, scratch: &mut Scratch, text: &str, mut f: impl PieceSink) {
        let Scratch {
            word,
            may_split,
            buf,
        } = scratch;
        // Most tool text is ASCII: bytes, no char decoding, and lowercase words as they are,
        // up to the word with the first non-ASCII character; chars from there.
        let Some(rest) = ascii_words(text, buf, &mut f) else {
            return;
        };
        let text = &text[rest..];
        word.clear();
        *may_split = false;
        // Where the current run of CJK characters began.
        let mut cjk_start = None;
        for (i, c) in text.char_indices() {
            // ASCII first: its classes are cheap to test.
            let (is_word, is_cjk) = if c.is_ascii() {
                (c.is_ascii_alphanumeric(), false)
            } else {
                let c = fold_width(c);
                let cjk = is_cjk(c);
                (!cjk && c.is_alphanumeric(), cjk)
            };
            if is_cjk {
                flush_word(word, may_split, buf, &mut f);
                cjk_start.get_or_insert(i);
            } else {
                if let Some(start) = cjk_start.take() {
                    cjk_grams(&text[start..i], &mut f);
                }
                if is_word {
                    let c = fold_width(c);
                    *may_split |= c.is_uppercase() || c.is_numeric();
                    word.push(c);
                } else {
                    flush_word(word, may_split, buf, &mut f);
                }
            }
        }
        flush_word(word, may_split, buf, &mut f);
        if let Some(start) = cjk_start {
            cjk_grams(&text[start..], &mut f);
        }
    }
}

/// Buffers for analysing text, kept across calls.
#[derive(Debug, Default)]
pub struct Scratch {
    word: Vec<char>,
    /// The word has a capital or a digit, so it may split.
    may_split: bool,
    buf: String,
}

fn flush_word(
    word: &mut Vec<char>,
    may_split: &mut bool,
    buf: &mut String,
    f: &mut impl PieceSink,
) {
    if word.is_empty() {
        return;
    }
    if !std::mem::take(may_split) {
        lowercase_into(word, buf);
        f.piece(Piece::Word {
            lower: buf,
            whole: false,
        });
        word.clear();
        return;
    }
    let lower = |at: Range<usize>, buf: &mut String| lowercase_into(&word[at], buf);
    word_pieces(word.len(), split_points(word), lower, buf, f);
    word.clear();
}

/// The pieces of a word of `len` characters or bytes split before each of `splits` (in
/// order, inside the word), each lowercased into `buf` by `lower`; then the whole word when
/// it split.
fn word_pieces(
    len: usize,
    splits: impl Iterator<Item = usize>,
    lower: impl Fn(Range<usize>, &mut String),
    buf: &mut String,
    f: &mut impl PieceSink,
) {
    let mut start = 0;
    let mut split = false;
    for end in splits.chain([len]) {
        split |= end < len;
        lower(start..end, buf);
        f.piece(Piece::Word {
            lower: buf,
            whole: false,
        });
        start = end;
    }
    if split {
        lower(0..len, buf);
        f.piece(Piece::Word {
            lower: buf,
            whole: true,
        });
    }
}

/// The pieces of the ASCII words of `text`: its words of letters and digits, each split as
/// [`split_points`] splits a word of chars. Stops at the first non-ASCII byte and returns
/// where the rest begins: that byte, or the start of the word it is in (none of whose pieces
/// were given), after which nothing carries over from the text before.
fn ascii_words(text: &str, buf: &mut String, f: &mut impl PieceSink) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if ASCII_CLASS[b as usize] == 0 {
            if !b.is_ascii() {
                return Some(i);
            }
            i += 1;
            continue;
        }
        let start = i;
        // A word of lowercase letters only is one piece.
        let mut lower_only = true;
        loop {
            // Eight bytes at a time while they are ASCII (most words end in the first eight).
            if let Some(&chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
                let chunk = u64::from_le_bytes(chunk);
                if chunk & HIGH == 0 {
                    let lower = in_range(chunk, b'a', b'z');
                    let word = lower | in_range(chunk, b'A', b'Z') | in_range(chunk, b'0', b'9');
                    // The word's bytes in this chunk, from the first.
                    let n = (!word & HIGH).trailing_zeros() / 8;
                    let of_word = HIGH & u64::MAX.checked_shl(8 * n).map_or(u64::MAX, |m| !m);
                    lower_only &= lower & of_word == of_word;
                    i += n as usize;
                    if n < 8 {
                        break;
                    }
                    continue;
                }
            }
            let Some(&b) = bytes.get(i) else { break };
            let class = ASCII_CLASS[b as usize];
            if class == 0 {
                if !b.is_ascii() {
                    return Some(start);
                }
                break;
            }
            lower_only &= class == LOWER;
            i += 1;
        }
        let word = &text[start..i];
        if lower_only {
            f.piece(Piece::Word {
                lower: word,
                whole: false,
            });
        } else {
            ascii_word_pieces(word, buf, f);
        }
    }
    None
}

const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;

/// The class of each byte (0: not part of a word), looked up rather than tested: tokenising
/// is a large part of an index build.
static ASCII_CLASS: [u8; 256] = {
    let mut classes = [0; 256];
    let mut b = 0;
    while b < 128 {
        classes[b] = match b as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            _ => 0,
        };
        b += 1;
    }
    classes
};

/// The pieces of an ASCII word with a capital or a digit.
fn ascii_word_pieces(word: &str, buf: &mut String, f: &mut impl PieceSink) {
    let bytes = word.as_bytes();
    let boundary = |i: usize| {
        let (prev, cur) = (bytes[i - 1], bytes[i]);
        let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
            || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_lower)
            || (prev.is_ascii_alphabetic() && cur.is_ascii_digit())
            || (prev.is_ascii_digit() && cur.is_ascii_alphabetic())
    };
    let splits = (1..bytes.len()).filter(|&i| boundary(i));
    let lower = |at: Range<usize>, buf: &mut String| ascii_lowercase_into(&bytes[at], buf);
    word_pieces(bytes.len(), splits, lower, buf, f);
}

/// `bytes` lowercased into `buf`, byte by byte: in the component, copying a few bytes with
/// `push_str` is a call out of the guest (`memory.copy`).
fn ascii_lowercase_into(bytes: &[u8], buf: &mut String) {
    buf.clear();
    buf.extend(bytes.iter().map(|b| char::from(b.to_ascii_lowercase())));
}

/// The unigrams and bigrams of a run of CJK characters, in order.
fn cjk_grams(run: &str, f: &mut impl PieceSink) {
    let mut chars = run.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        f.piece(Piece::Cjk {
            gram: &run[i..end],
            bigram: false,
        });
        if let Some(&(_, next)) = chars.peek() {
            f.piece(Piece::Cjk {
                gram: &run[i..end + next.len_utf8()],
                bigram: true,
            });
        }
    }
}

fn lowercase_into(chars: &[char], buf: &mut String) {
    buf.clear();
    for &c in chars {
        if c.is_ascii() {
            buf.push(c.to_ascii_lowercase());
        } else {
            buf.extend(c.to_lowercase());
        }
    }
}

/// Where a word splits: at camelCase humps, before the last capital of a leading acronym
/// (`HTMLParser` -> HTML, Parser), and between letters and digits.
fn split_points(word: &[char]) -> impl Iterator<Item = usize> + '_ {
    (1..word.len()).filter(move |&i| {
        let (prev, cur) = (word[i - 1], word[i]);
        let next_lower = word.get(i + 1).is_some_and(|n| n.is_lowercase());
        (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
            || (prev.is_alphabetic() && cur.is_numeric())
            || (prev.is_numeric() && cur.is_alphabetic())
    })
}

/// The stop words of one language from `stop_words.txt`. A list of ours: the stop-words crate
/// compiles in every language it knows (+165 KB of component for two lists).
fn stop_words(language: &str) -> FxHashSet<&'static str> {
    let header = format!("[{language}]");
    STOP_WORDS
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .skip_while(|line| *line != header)
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .flat_map(str::split_whitespace)
        .collect()
}

const STOP_WORDS: &str = include_str!("stop_words.txt");

/// True for the scripts written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x3134F) // CJK Extensions B to G
}

/// Full-width ASCII, common in Chinese text (`ＰＤＦ`), as plain ASCII.
pub fn fold_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        analyzer()
            .tokens(text)
            .into_iter()
            .map(|t| t.term)
            .collect()
    }

    #[test]
    fn names_split_on_separators_camel_case_and_digits() {
        assert_eq!(
            terms("get_current_stock_price"),
            ["get", "current", "stock", "price"]
        );
        assert_eq!(
            terms("getBaziDetail"),
            ["get", "bazi", "detail", "getbazidetail"]
        );
        assert_eq!(terms("HTMLParser"), ["html", "parser", "htmlparser"]);
        assert_eq!(
            terms("get-36kr-trending"),
            ["get", "36", "kr", "36kr", "trend"]
        );
    }

    #[test]
    fn english_is_stemmed_without_stop_words() {
        assert_eq!(
            terms("Reads the files of a directory"),
            ["read", "file", "directori"]
        );
        assert!(terms("server: a tool, please").is_empty());
    }

    fn pieces(text: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        analyzer().for_each_piece(text, |piece| {
            if let Piece::Word { lower, whole } = piece {
                out.push((lower.to_string(), whole));
            }
        });
        out
    }

    #[test]
    fn ascii_text_splits_as_any_text_does() {
        for text in [
            "getBaziDetail HTMLParser get-36kr-trending utf8 a1b2C3 ALLCAPS x",
            "readFile, write_file; List-Directory 9to5Mac iPhone15Pro",
        ] {
            // A trailing non-ASCII word sends the text down the general path.
            let mut general = pieces(&format!("{text} é"));
            assert_eq!(general.pop(), Some(("é".to_string(), false)));
            assert_eq!(pieces(text), general, "{text}");
        }
    }

    /// Every piece the general path (chars, from the start) gives, for text of any kind.
    fn pieces_by_chars(text: &str) -> Vec<Piece<'static>> {
        let mut out = Vec::new();
        let (mut word, mut may_split, mut buf) = (Vec::new(), false, String::new());
        let mut cjk_start = None;
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        let mut f = |piece: Piece<'_>| {
            out.push(match piece {
                Piece::Word { lower, whole } => Piece::Word {
                    lower: leak(lower),
                    whole,
                },
                Piece::Cjk { gram, bigram } => Piece::Cjk {
                    gram: leak(gram),
                    bigram,
                },
            })
        };
        for (i, c) in text.char_indices() {
            let c = fold_width(c);
            if is_cjk(c) {
                flush_word(&mut word, &mut may_split, &mut buf, &mut f);
                cjk_start.get_or_insert(i);
                continue;
            }
            if let Some(start) = cjk_start.take() {
                cjk_grams(&text[start..i], &mut f);
            }
            if c.is_alphanumeric() {
                may_split |= c.is_uppercase() || c.is_numeric();
                word.push(c);
            } else {
                flush_word(&mut word, &mut may_split, &mut buf, &mut f);
            }
        }
        flush_word(&mut word, &mut may_split, &mut buf, &mut f);
        if let Some(start) = cjk_start {
            cjk_grams(&text[start..], &mut f);
        }
        out
    }

    #[test]
    fn text_read_as_ascii_up_to_its_first_other_character_splits_as_chars_do() {
        for text in [
            "getBaziDetail café HTMLParser",
            "Read files 读取文件 quickly",
            "readFile读取 x2Y",
            "naïveCamelCase and ＰＤＦ files",
            "plain ascii only, with_Under_scores",
            "é",
            "股票",
            "a股b",
            "endsWith é",
            "aVeryLongCamelCaseIdentifierName reallylonglowercaseword ABCDEFGHIJKLMNOP x",
            "0123456789abcdefXYZ::ab@cd[ef]gh{ij}kl`mn/op:qr",
        ] {
            let mut fast = Vec::new();
            analyzer().for_each_piece(text, |piece| {
                fast.push(match piece {
                    Piece::Word { lower, whole } => (lower.to_string(), whole),
                    Piece::Cjk { gram, bigram } => (gram.to_string(), bigram),
                })
            });
            let slow: Vec<(String, bool)> = pieces_by_chars(text)
                .into_iter()
                .map(|piece| match piece {
                    Piece::Word { lower, whole } => (lower.to_string(), whole),
                    Piece::Cjk { gram, bigram } => (gram.to_string(), bigram),
                })
                .collect();
            assert_eq!(fast, slow, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_splits_as_chars_do(text in "[a-zA-Z0-9 _:@\\[`{/\\x7féÉ股票ＰＤ\\n-]{0,40}") {
            let mut fast = Vec::new();
            analyzer().for_each_piece(&text, |piece| fast.push(format!("{piece:?}")));
            let slow: Vec<String> = pieces_by_chars(&text).iter().map(|p| format!("{p:?}")).collect();
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    fn stemmed_bytes(f: impl FnOnce()) -> usize {
        let before = work::STEMMED_BYTES.get();
        f();
        work::STEMMED_BYTES.get() - before
    }

    #[test]
    fn a_word_too_long_for_any_stem_is_indexed_as_written_unstemmed() {
        let analyzer = analyzer();
        let long = format!("{}ing", "ay".repeat(MAX_STEMMED_BYTES));
        let mut term = None;
        assert_eq!(stemmed_bytes(|| term = analyzer.word_term(&long)), 0);
        assert_eq!(term.as_deref(), Some(long.as_str()));
        assert_eq!(terms(&format!("Running {long}")), ["run", long.as_str()]);
        let longest = "a".repeat(MAX_STEMMED_BYTES - 3) + "ing";
        assert_ne!(
            analyzer.word_term(&longest).as_deref(),
            Some(longest.as_str())
        );
    }

    #[test]
    fn both_stop_word_lists_load() {
        let analyzer = analyzer();
        assert!(analyzer.english_stop.contains("the") && analyzer.english_stop.len() > 100);
        assert!(analyzer.chinese_stop.contains("的") && !analyzer.chinese_stop.contains("[zh]"));
        assert!(!analyzer.english_stop.contains("的"));
    }

    #[test]
    fn cjk_runs_become_unigrams_and_bigrams_without_stop_words() {
        let t = terms("股票的价格");
        for gram in ["股", "股票", "票", "价", "价格", "格"] {
            assert!(t.contains(&gram.to_string()), "{gram} in {t:?}");
        }
        assert!(!t.contains(&"的".to_string()));
        assert_eq!(terms("ＰＤＦ文件"), ["pdf", "文", "文件", "件"]);
    }
}
