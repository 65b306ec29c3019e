//! A query as weighted index terms: its own terms first, then weaker ones it implies (compound
//! words, name prefixes, a typo's correction, the vocabulary's translations and synonyms).

use rustc_hash::FxHashMap;

use super::analyze::{TokenKind, analyzer};
use super::index::SearchIndex;
use super::vocab;

/// A CJK character alone says less than the bigrams around it.
const CJK_UNIGRAM: f32 = 0.3;
/// Two query words written as one in a tool (`file system` -> `filesystem`).
const JOINED: f32 = 0.8;
/// An unknown query word read as two known ones (`mindmap` -> `mind`, `map`).
const SPLIT: f32 = 0.6;
/// A known name term one edit away from an unknown query word.
const TYPO: f32 = 0.7;
/// A name term the query word begins (`screen` -> `screenshot`), scaled by how much it covers.
const PREFIX: f32 = 0.6;
/// A word the vocabulary adds in the other language: the same word, translated.
const TRANSLATION: f32 = 1.0;
/// A word the vocabulary adds in the query's language: a synonym, close but not the same.
const SYNONYM: f32 = 0.5;

/// Prefixes shorter than this match too many names.
const MIN_PREFIX_CHARS: usize = 4;
const MAX_PREFIX_MATCHES: usize = 8;
/// Shorter words are too often one edit away from an unrelated one.
const MIN_TYPO_CHARS: usize = 5;
const MAX_TYPO_MATCHES: usize = 3;
const MIN_SPLIT_PART_CHARS: usize = 3;

/// A query as the index reads it.
pub(super) struct Query {
    /// Index terms with their weights, each once at its highest weight, sorted by term.
    pub terms: Vec<(u32, f32)>,
    /// The query's words in order, as index terms (`None`: a word no tool holds).
    pub words: Vec<Option<u32>>,
}

impl Query {
    /// True when the query holds `term` at a weight that stands for the word itself: as
    /// written, joined, translated or as a synonym, but not a prefix or a typo.
    pub fn names(&self, term: u32) -> bool {
        self.terms
            .binary_search_by_key(&term, |&(t, _)| t)
            .is_ok_and(|i| self.terms[i].1 >= SYNONYM)
    }
}

pub(super) fn parse(index: &SearchIndex, query: &str) -> Query {
    let mut weights = Weights::default();
    let tokens = analyzer().tokens(query);
    for token in &tokens {
        let weight = match token.kind {
            TokenKind::CjkUnigram => CJK_UNIGRAM,
            TokenKind::Word | TokenKind::WholeWord | TokenKind::CjkBigram => 1.0,
        };
        match index.term_id(&token.term) {
            Some(id) => weights.add(id, weight),
            None if token.kind == TokenKind::Word => {
                unknown_word(index, &token.raw, &token.term, &mut weights)
            }
            None => {}
        }
        if matches!(token.kind, TokenKind::Word | TokenKind::WholeWord) {
            prefixes(index, &token.term, &mut weights);
        }
    }

    let words: Vec<&super::Token> = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Word)
        .collect();
    for pair in words.windows(2) {
        let joined = format!("{}{}", pair[0].raw, pair[1].raw);
        if let Some(id) = analyzer()
            .word_term(&joined)
            .and_then(|t| index.term_id(&t))
        {
            weights.add(id, JOINED);
        }
    }

    let word_ids = words.iter().map(|t| index.term_id(&t.term)).collect();
    let vocabulary = vocab::built_in();
    let stems: Vec<&str> = words.iter().map(|t| t.term.as_str()).collect();
    for named in vocabulary.concepts_in(&stems, &query.to_lowercase()) {
        for expansion in vocabulary.expansion(named.concept) {
            if let Some(id) = index.term_id(&expansion.term) {
                let weight = if expansion.language == named.language {
                    SYNONYM
                } else {
                    TRANSLATION
                };
                weights.add(id, weight * expansion.share);
            }
        }
    }
    Query {
        terms: weights.into_vec(),
        words: word_ids,
    }
}

/// A query word no tool holds: two known words run together, or a typo of a name term.
fn unknown_word(index: &SearchIndex, raw: &str, term: &str, weights: &mut Weights) {
    let chars: Vec<(usize, char)> = raw.char_indices().collect();
    let split = (MIN_SPLIT_PART_CHARS..=chars.len().saturating_sub(MIN_SPLIT_PART_CHARS))
        .rev()
        .find_map(|i| {
            let (left, right) = raw.split_at(chars[i].0);
            let left = analyzer().word_term(left).and_then(|t| index.term_id(&t))?;
            let right = analyzer()
                .word_term(right)
                .and_then(|t| index.term_id(&t))?;
            Some((left, right))
        });
    if let Some((left, right)) = split {
        weights.add(left, SPLIT);
        weights.add(right, SPLIT);
        return;
    }
    let length = term.chars().count();
    if length < MIN_TYPO_CHARS {
        return;
    }
    index
        .name_terms()
        .iter()
        .filter(|(name, _)| name.chars().count().abs_diff(length) <= 1)
        .filter(|(name, _)| strsim::osa_distance(name, term) == 1)
        .take(MAX_TYPO_MATCHES)
        .for_each(|&(_, id)| weights.add(id, TYPO));
}

/// Name terms that begin with `term`, weighted by the share of the name term it covers.
fn prefixes(index: &SearchIndex, term: &str, weights: &mut Weights) {
    let length = term.chars().count();
    if length < MIN_PREFIX_CHARS {
        return;
    }
    let names = index.name_terms();
    let start = names.partition_point(|(name, _)| name.as_ref() < term);
    names[start..]
        .iter()
        .take_while(|(name, _)| name.starts_with(term))
        .filter(|(name, _)| name.as_ref() != term)
        .take(MAX_PREFIX_MATCHES)
        .for_each(|(name, id)| {
            weights.add(*id, PREFIX * length as f32 / name.chars().count() as f32);
        });
}

#[derive(Default)]
struct Weights(FxHashMap<u32, f32>);

impl Weights {
    fn add(&mut self, term: u32, weight: f32) {
        let entry = self.0.entry(term).or_insert(0.0);
        *entry = entry.max(weight);
    }

    /// Sorted by term, so scores are summed in the same order on every platform.
    fn into_vec(self) -> Vec<(u32, f32)> {
        let mut terms: Vec<(u32, f32)> = self.0.into_iter().collect();
        terms.sort_unstable_by_key(|&(term, _)| term);
        terms
    }
}
