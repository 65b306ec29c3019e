//! The built-in bilingual vocabulary (`vocab.txt`): general tool words in English and Chinese,
//! grouped into concepts. A concept named in a query adds the concept's other words to the
//! query, so a Chinese query reaches a tool described in English, and the reverse.

use rustc_hash::FxHashMap;
use std::ops::Range;
use std::sync::LazyLock;

use super::analyze::{TokenKind, analyzer, is_cjk};

const VOCABULARY: &str = include_str!("vocab.txt");

static BUILT_IN: LazyLock<Vocabulary> = LazyLock::new(|| {
    // The file ships with the plugin and a unit test parses it; an error here is a build bug,
    // and an empty vocabulary only costs recall.
    Vocabulary::parse(VOCABULARY).unwrap_or_default()
});

/// The vocabulary shipped with the plugin.
pub fn built_in() -> &'static Vocabulary {
    &BUILT_IN
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VocabError {
    #[error("vocabulary line {line}: {message}")]
    Line { line: usize, message: String },
}

pub type ConceptId = u32;

/// The language a word of the vocabulary is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    English,
    Chinese,
}

/// One word of a concept as index terms (several for a phrase or a long Chinese word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub language: Language,
    pub terms: Vec<String>,
}

/// A concept named in a query, in which language, and by which word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    pub language: Language,
    /// Where the word that names it starts: an English word stem's index, a Chinese word's
    /// character index. A word of several concepts (`文件`: file and document) names them all
    /// at one place. (Fields in this order: sorted, concepts come word by word.)
    pub at: usize,
    pub concept: ConceptId,
}

#[derive(Debug, Default)]
pub struct Vocabulary {
    /// Per concept, its words as index terms: a word of several terms (`bar chart`, `柱状图`)
    /// is in a tool only if all of its terms are.
    forms: Vec<Vec<Form>>,
    /// English phrases as stem sequences, by first stem.
    english: FxHashMap<String, Vec<(Vec<String>, ConceptId)>>,
    /// Chinese words (lowercase: some mix in Latin letters, like `word文档`).
    chinese: FxHashMap<String, Vec<ConceptId>>,
    longest_chinese: usize,
}

impl Vocabulary {
    /// Parses `english, english phrase = 中文 中文` lines; `#` starts a comment.
    pub fn parse(text: &str) -> Result<Self, VocabError> {
        let mut vocab = Self::default();
        for (index, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let error = |message: &str| VocabError::Line {
                line: index + 1,
                message: message.to_string(),
            };
            let (english, chinese) = line.split_once('=').unwrap_or((line, ""));
            let id = vocab.forms.len() as ConceptId;
            let mut forms: Vec<Form> = Vec::new();
            for phrase in english.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let stems: Vec<String> = analyzer()
                    .tokens(phrase)
                    .into_iter()
                    .filter(|t| t.kind == TokenKind::Word)
                    .map(|t| t.term)
                    .collect();
                let Some(first) = stems.first() else {
                    return Err(error(&format!("`{phrase}` has only stop words")));
                };
                vocab
                    .english
                    .entry(first.clone())
                    .or_default()
                    .push((stems.clone(), id));
                forms.push(Form {
                    language: Language::English,
                    terms: stems,
                });
            }
            for word in chinese.split([' ', ',', '，']).filter(|w| !w.is_empty()) {
                if !word.chars().any(is_cjk) {
                    return Err(error(&format!("`{word}` is not Chinese")));
                }
                let word = word.to_lowercase();
                vocab.longest_chinese = vocab.longest_chinese.max(word.chars().count());
                vocab.chinese.entry(word.clone()).or_default().push(id);
                let tokens = analyzer().tokens(&word);
                let bigrams: Vec<String> = tokens
                    .iter()
                    .filter(|t| t.kind == TokenKind::CjkBigram)
                    .map(|t| t.term.clone())
                    .collect();
                let terms = match tokens.as_slice() {
                    [single] if single.kind == TokenKind::CjkUnigram => vec![single.term.clone()],
                    _ => bigrams,
                };
                if !terms.is_empty() {
                    forms.push(Form {
                        language: Language::Chinese,
                        terms,
                    });
                }
            }
            if forms.is_empty() {
                return Err(error("no words"));
            }
            vocab.forms.push(forms);
        }
        Ok(vocab)
    }

    pub fn len(&self) -> usize {
        self.forms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// The concepts a query names: English phrases found in its word stems (in order, stop words
    /// removed) and Chinese words found in its lowercase text by forward maximum matching, so
    /// `地图` is read as "map" and not as `地` + `图` ("image").
    /// `dictionary_words` are CC-CEDICT's words in the text (byte ranges in order, not
    /// overlapping: [`lexicon::chinese_word_spans`](super::lexicon::chinese_word_spans)). In
    /// order of the words that name them.
    pub fn concepts_in(
        &self,
        stems: &[&str],
        lower_text: &str,
        dictionary_words: &[Range<usize>],
    ) -> Vec<Named> {
        let mut found = Vec::new();
        let named = |concept: ConceptId, language: Language, at: usize| Named {
            language,
            at,
            concept,
        };
        for (i, stem) in stems.iter().enumerate() {
            for (phrase, id) in self.english.get(*stem).into_iter().flatten() {
                let rest = &stems[i..];
                if rest.len() >= phrase.len() && phrase.iter().zip(rest).all(|(p, s)| p == s) {
                    found.push(named(*id, Language::English, i));
                }
            }
        }
        let chars: Vec<(usize, char)> = lower_text.char_indices().collect();
        // A one-character term inside a longer word of CC-CEDICT is not that word: `包`
        // (package) in `包含` (contain), `建` (create) in `建议` (suggestion).
        // The words are in order and do not overlap: the first that ends after `at` is the
        // only one that can hold it.
        let inside_word = |at: usize| {
            let next = dictionary_words.partition_point(|w| w.end <= at);
            dictionary_words.get(next).is_some_and(|w| w.contains(&at))
        };
        let mut i = 0;
        while i < chars.len() {
            let longest = (1..=self.longest_chinese.min(chars.len() - i))
                .rev()
                .find_map(|len| {
                    let start = chars[i].0;
                    let end = chars.get(i + len).map_or(lower_text.len(), |&(b, _)| b);
                    if len == 1 && inside_word(start) {
                        return None;
                    }
                    self.chinese
                        .get(&lower_text[start..end])
                        .map(|ids| (len, ids))
                });
            match longest {
                Some((len, ids)) => {
                    found.extend(ids.iter().map(|&id| named(id, Language::Chinese, i)));
                    i += len;
                }
                None => i += 1,
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The words of concept `id` as index terms.
    pub fn forms(&self, id: ConceptId) -> &[Form] {
        self.forms
            .get(id as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Every concept's words as index terms.
    pub fn concept_forms(&self) -> impl Iterator<Item = &[Form]> {
        self.forms.iter().map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::lexicon;

    fn concepts(vocab: &Vocabulary, query: &str) -> Vec<Vec<String>> {
        let tokens = analyzer().tokens(query);
        let stems: Vec<&str> = tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Word)
            .map(|t| t.term.as_str())
            .collect();
        let lower = query.to_lowercase();
        vocab
            .concepts_in(&stems, &lower, &lexicon::chinese_word_spans(&lower))
            .into_iter()
            .map(|named| {
                let mut terms: Vec<String> = vocab
                    .forms(named.concept)
                    .iter()
                    .flat_map(|f| f.terms.clone())
                    .collect();
                terms.sort();
                terms
            })
            .collect()
    }

    #[test]
    fn the_built_in_vocabulary_parses() {
        let vocab = Vocabulary::parse(VOCABULARY).unwrap();
        assert!(vocab.len() > 300, "{} concepts", vocab.len());
        assert_eq!(built_in().len(), vocab.len());
    }

    #[test]
    fn chinese_words_reach_english_stems_and_back() {
        let vocab = Vocabulary::parse("stock price = 股价\nweather, forecast = 天气 预报").unwrap();
        assert_eq!(concepts(&vocab, "查一下股价"), [["price", "stock", "股价"]]);
        assert_eq!(
            concepts(&vocab, "Weather tomorrow"),
            [["forecast", "weather", "天气", "预报"]]
        );
        assert!(concepts(&vocab, "stock market").is_empty());
    }

    #[test]
    fn the_longest_chinese_word_wins() {
        let vocab = Vocabulary::parse("map = 地图\nimage = 图\nmind map = 思维导图").unwrap();
        assert_eq!(concepts(&vocab, "打开地图"), [["map", "地图"]]);
        assert_eq!(
            concepts(&vocab, "画思维导图"),
            [["map", "mind", "导图", "思维", "维导"]]
        );
        assert_eq!(concepts(&vocab, "这张图"), [["imag", "图"]]);
    }

    #[test]
    fn one_character_is_a_word_only_where_the_dictionary_leaves_it_alone() {
        let vocab = Vocabulary::parse("package = 包\ncreate = 建\nfile = 文件").unwrap();
        assert_eq!(concepts(&vocab, "包含关键词的文件"), [["file", "文件"]]);
        assert!(concepts(&vocab, "给个建议").is_empty());
        assert_eq!(concepts(&vocab, "装一个包"), [["packag", "包"]]);
        assert_eq!(
            concepts(&vocab, "建一个文件"),
            [["creat", "建"], ["file", "文件"]]
        );
    }

    #[test]
    fn bad_lines_are_rejected_with_their_number() {
        assert_eq!(
            Vocabulary::parse("file = 文件\nthe = 的").unwrap_err(),
            VocabError::Line {
                line: 2,
                message: "`the` has only stop words".into()
            }
        );
        assert!(Vocabulary::parse("file = file").is_err());
    }
}
