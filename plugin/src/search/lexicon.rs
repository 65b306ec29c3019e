//! Maintained lexical resources, pruned to tool language when generated (`lexicon/generate.py`):
//! CC-CEDICT's English glosses of Chinese words (`lexicon/cedict.tsv`, CC BY-SA 4.0) and
//! WordNet's synonyms of English nouns and verbs, one word or two (`lexicon/wordnet.tsv`). A
//! query word or phrase found here adds these words to its slot at a lower weight than the word
//! itself. And what a named thing is, as tools take it (`lexicon/kinds.tsv`): ISO 4217's
//! currencies (`euro` -> currency, eur) and GeoNames' large cities (`oslo` -> city), so that a
//! request that names one finds the tool whose parameters are a currency or a city; and what a
//! file's extension says it is, from mime-db (`.docx` -> document, `.png` -> image).
//!
//! Each file is `key<TAB>value` lines sorted by key, read in place by binary search: nothing is
//! parsed, inflated or allocated when the component loads, an index is built or a query runs.
//! (Deflating them would shrink the component, but inflating CC-CEDICT once takes about 50 ms
//! inside the component, more than a host allows one call.)

use super::analyze::is_cjk;

const CEDICT: Table = Table(include_str!("lexicon/cedict.tsv"));
const WORDNET: Table = Table(include_str!("lexicon/wordnet.tsv"));
const KINDS: Table = Table(include_str!("lexicon/kinds.tsv"));

/// The longest Chinese word the CC-CEDICT table holds, in characters.
const LONGEST_CHINESE: usize = 4;

/// Sorted `key<TAB>value` lines.
struct Table(&'static str);

impl Table {
    /// The value of `key`, if a line has it.
    fn get(&self, key: &str) -> Option<&'static str> {
        let text = self.0;
        let bytes = text.as_bytes();
        // `lo` is always a line start, `hi` a line start or the end.
        let (mut lo, mut hi) = (0, text.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let start = bytes[lo..mid]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(lo, |at| lo + at + 1);
            let end = bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |at| start + at);
            // Both ends sit next to a newline, so they are character boundaries.
            let line = &text[start..end];
            let (k, value) = line.split_once('\t').unwrap_or((line, ""));
            match k.as_bytes().cmp(key.as_bytes()) {
                std::cmp::Ordering::Equal => return Some(value),
                std::cmp::Ordering::Less => lo = (end + 1).min(text.len()),
                std::cmp::Ordering::Greater => hi = start,
            }
        }
        None
    }

    /// The non-empty items of `key`'s value, split at `separator`; none if no line has it.
    fn values(&self, key: &str, separator: char) -> impl Iterator<Item = &'static str> + use<> {
        self.get(key)
            .into_iter()
            .flat_map(move |v| v.split(separator))
            .filter(|item| !item.is_empty())
    }
}

/// The English glosses of a Chinese word or character (`天气` -> `weather`, `图` -> diagram,
/// picture, chart, ...), each one or two words.
pub fn glosses(chinese: &str) -> impl Iterator<Item = &'static str> {
    CEDICT.values(chinese, '|')
}

/// WordNet's synonyms of a lowercase English noun or verb (`fetch` -> bring, get, convey).
pub fn synonyms(word: &str) -> impl Iterator<Item = &'static str> + use<> {
    WORDNET.values(word, ' ')
}

/// WordNet's one-word synonyms of a two-word English verb or noun (`work out` -> figure,
/// calculate, cipher), given as its two lowercase words with one space between them.
pub fn phrase_synonyms(phrase: &str) -> impl Iterator<Item = &'static str> + use<> {
    WORDNET.values(phrase, ' ')
}

/// What a lowercase English name of one or two words is, as tools take it: `city`, or
/// `currency` and its ISO 4217 code (`swiss franc` -> currency, chf).
pub fn kinds(name: &str) -> impl Iterator<Item = &'static str> + use<> {
    KINDS.values(name, ' ')
}

/// The CC-CEDICT words in `text`, as byte ranges, by forward maximum matching over each run of
/// Chinese characters (two to four characters a word; characters no word covers are skipped,
/// though the table glosses most of them too).
pub fn chinese_word_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut words = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let run = chars[i..].iter().take_while(|(_, c)| is_cjk(*c)).count();
        let found = (2..=LONGEST_CHINESE.min(run)).rev().find_map(|len| {
            let start = chars[i].0;
            let end = chars.get(i + len).map_or(text.len(), |&(b, _)| b);
            CEDICT.get(&text[start..end]).map(|_| (len, start..end))
        });
        match found {
            Some((len, word)) => {
                words.push(word);
                i += len;
            }
            None => i += 1,
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(table: &Table) -> Vec<&'static str> {
        table
            .0
            .lines()
            .map(|l| l.split_once('\t').map_or(l, |(k, _)| k))
            .collect()
    }

    #[test]
    fn the_tables_are_sorted_and_every_key_is_found() {
        for (table, least) in [(&CEDICT, 60_000), (&WORDNET, 10_000), (&KINDS, 1_000)] {
            let keys = keys(table);
            assert!(keys.len() > least, "{} keys", keys.len());
            assert!(keys.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
            for key in keys {
                assert!(table.get(key).is_some(), "{key}");
            }
        }
        assert_eq!(CEDICT.get(""), None);
        assert_eq!(
            CEDICT.get("中华人民共和国"),
            None,
            "longer words are read as their parts"
        );
        assert_eq!(WORDNET.get("zzzzzz"), None);
    }

    #[test]
    fn a_chinese_word_reaches_its_english_gloss() {
        assert_eq!(glosses("天气").collect::<Vec<_>>(), ["weather"]);
        assert!(glosses("下载").any(|g| g == "download"));
        assert_eq!(glosses("不是词").count(), 0);
    }

    #[test]
    fn a_proper_noun_reaches_its_name() {
        // CC-CEDICT defines one as `Name, what it is`: the gloss is the name alone.
        assert_eq!(glosses("维基百科").collect::<Vec<_>>(), ["wikipedia"]);
        assert_eq!(glosses("伦敦").collect::<Vec<_>>(), ["london"]);
    }

    #[test]
    fn a_character_has_glosses_too() {
        assert!(glosses("图").any(|g| g == "chart"));
        assert_eq!(
            chinese_words("画个图"),
            Vec::<&str>::new(),
            "no word holds it: the query glosses the character alone"
        );
    }

    #[test]
    fn a_variant_means_what_its_target_does_after_its_own_senses() {
        // CC-CEDICT defines simplified `回复` as to recover and as a variant of `回覆`, to reply.
        let glosses: Vec<&str> = glosses("回复").collect();
        let at = |g: &str| glosses.iter().position(|&x| x == g);
        assert!(at("recover").unwrap() < at("reply").unwrap(), "{glosses:?}");
    }

    #[test]
    fn a_word_defined_by_see_another_means_what_that_one_does() {
        // CC-CEDICT defines `哈尔滨` as `see 哈尔滨市[...]`, which is Harbin.
        assert_eq!(glosses("哈尔滨").collect::<Vec<_>>(), ["harbin"]);
    }

    #[test]
    fn a_word_keeps_its_later_senses() {
        // CC-CEDICT's fourth sense of `帖子` is the forum post that tools mean; `解`'s
        // twelfth is explain.
        assert!(glosses("帖子").any(|g| g == "post"));
        assert!(glosses("解").any(|g| g == "explain"));
        // A proper noun's reading comes after the common ones.
        assert_eq!(glosses("意").next(), Some("idea"));
        assert_eq!(glosses("意").nth(9), Some("italy"));
    }

    #[test]
    fn a_currency_or_a_city_has_its_kind() {
        assert_eq!(kinds("euro").collect::<Vec<_>>(), ["currency", "eur"]);
        assert_eq!(
            kinds("swiss franc").collect::<Vec<_>>(),
            ["currency", "chf"]
        );
        assert_eq!(kinds("euros").collect::<Vec<_>>(), ["currency", "eur"]);
        // A code that is an English word is left out (the Turkish lira's `try`); so are funds.
        assert_eq!(kinds("turkish lira").collect::<Vec<_>>(), ["currency"]);
        assert_eq!(kinds("wir euro").count(), 0);
        // A word that ends several currencies' names says currency, not which.
        assert_eq!(kinds("dollar").collect::<Vec<_>>(), ["currency"]);
        assert_eq!(kinds("oslo").collect::<Vec<_>>(), ["city"]);
        // A city named by a common word is not read as one, unless it is a city of millions;
        // an adjective is no currency.
        assert_eq!(kinds("reading").count(), 0);
        assert_eq!(kinds("shanghai").collect::<Vec<_>>(), ["city"]);
        assert_eq!(kinds("real").count(), 0);
    }

    #[test]
    fn a_files_extension_has_its_kind() {
        assert_eq!(kinds(".docx").collect::<Vec<_>>(), ["document"]);
        assert_eq!(kinds(".xlsx").collect::<Vec<_>>(), ["sheet"]);
        assert_eq!(kinds(".png").collect::<Vec<_>>(), ["image"]);
        assert!(kinds(".wav").any(|k| k == "audio"));
        // A generic type's subtype says nothing (`text/plain`); source code is not a media
        // type's file (mime-db's `.ts` is an MPEG stream, `.js` text); the word alone is no
        // file.
        assert_eq!(kinds(".txt").collect::<Vec<_>>(), ["text"]);
        assert_eq!(kinds(".ts").count(), 0);
        assert_eq!(kinds(".js").count(), 0);
        assert_eq!(kinds(".h").count(), 0);
        // A domain's ending is no file's (`claude.ai`), unless a media type names it first.
        assert_eq!(kinds(".ai").count(), 0);
        assert_eq!(kinds(".org").count(), 0);
        assert_eq!(kinds(".md").collect::<Vec<_>>(), ["text"]);
        // A `+suffix` is the type's syntax, not what it is: `application/epub+zip`.
        assert_eq!(kinds(".epub").count(), 0);
        assert_eq!(kinds("docx").count(), 0);
    }

    #[test]
    fn english_synonyms_come_from_wordnet() {
        assert!(synonyms("fetch").any(|s| s == "get"));
        assert_eq!(synonyms("qwertyuiop").count(), 0);
    }

    fn chinese_words(text: &str) -> Vec<&str> {
        chinese_word_spans(text)
            .into_iter()
            .map(|span| &text[span])
            .collect()
    }

    #[test]
    fn the_longest_word_is_taken_first() {
        assert_eq!(chinese_words("明天的天气预报"), ["明天", "天气预报"]);
        assert_eq!(chinese_words("明天的天气"), ["明天", "天气"]);
        assert_eq!(chinese_words("下载文件夹"), ["下载", "文件夹"]);
        assert_eq!(chinese_words("download 文件 x"), ["文件"]);
        assert!(chinese_words("").is_empty());
    }

    proptest::proptest! {
        /// The vocabulary finds the word around a character by binary search over the spans.
        #[test]
        fn word_spans_are_in_order_and_do_not_overlap(text in "[天气预报明的下载文件夹 a-z]{0,24}") {
            let spans = chinese_word_spans(&text);
            proptest::prop_assert!(spans.iter().all(|s| s.start < s.end));
            proptest::prop_assert!(spans.windows(2).all(|w| w[0].end <= w[1].start));
        }
    }
}
