//! Which tools hold a term, and each term's idf from that: a term in a group's text is held by
//! all of the group's tools, and a vocabulary word counts every tool that holds it or one of
//! its translations.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

use super::bm25;
use super::index::Postings;
use super::rows::Rows;
use super::vocab::{self, Form, Language};

/// Which tools hold a term, in their own text or through their group's.
pub(super) struct Holders<'a> {
    /// The full build's postings and the added tools'.
    pub segments: [&'a Postings; 2],
    pub group_postings: &'a Postings,
    /// Per group, its tools that are not removed.
    pub members: &'a Rows<u32>,
    /// The group of each tool.
    pub groups: &'a [u32],
    pub removed: &'a [bool],
}

impl Holders<'_> {
    /// How many tools hold `term`, in an index with no added or removed tools (a full build).
    pub fn count_built(&self, term: u32) -> usize {
        let own = self.segments[0].row(term as usize);
        let in_groups = self.group_postings.row(term as usize);
        if in_groups.is_empty() {
            return own.len();
        }
        let through_groups: usize = in_groups
            .iter()
            .map(|p| self.members.row(p.doc as usize).len())
            .sum();
        // Tools that hold it both ways count once; group postings are sorted by group.
        let both = own
            .iter()
            .filter(|p| {
                let group = self.groups[p.doc as usize];
                in_groups.binary_search_by_key(&group, |g| g.doc).is_ok()
            })
            .count();
        own.len() + through_groups - both
    }

    fn tools(&self) -> usize {
        self.groups.len()
    }

    /// The tools that hold `term` and are not removed.
    fn set(&self, term: u32) -> ToolSet {
        let mut set = ToolSet::new(self.tools());
        for segment in self.segments {
            for posting in segment.row(term as usize) {
                if !self.removed[posting.doc as usize] {
                    set.insert(posting.doc);
                }
            }
        }
        for posting in self.group_postings.row(term as usize) {
            for &tool in self.members.row(posting.doc as usize) {
                set.insert(tool);
            }
        }
        set
    }
}

/// The vocabulary's concepts by the terms of their forms, so an update finds the concepts a
/// changed term is in.
static CONCEPTS_BY_TERM: LazyLock<FxHashMap<&'static str, Vec<u32>>> = LazyLock::new(|| {
    let mut by_term: FxHashMap<&'static str, Vec<u32>> = FxHashMap::default();
    for (concept, forms) in vocab::built_in().concept_forms().enumerate() {
        for form in forms {
            for term in &form.terms {
                let concepts = by_term.entry(term.as_str()).or_default();
                if concepts.last() != Some(&(concept as u32)) {
                    concepts.push(concept as u32);
                }
            }
        }
    }
    by_term
});

/// The concepts whose forms hold `term`.
pub(super) fn concepts_with(term: &str) -> &'static [u32] {
    CONCEPTS_BY_TERM.get(term).map_or(&[], Vec::as_slice)
}

/// The single-term forms of `concept`.
pub(super) fn single_terms(concept: u32) -> impl Iterator<Item = &'static str> {
    concept_forms(concept)
        .iter()
        .filter_map(|form| match form.terms.as_slice() {
            [single] => Some(single.as_str()),
            _ => None,
        })
}

fn concept_forms(concept: u32) -> &'static [Form] {
    vocab::built_in().forms(concept)
}

pub(super) fn concept_count() -> u32 {
    vocab::built_in().concept_forms().count() as u32
}

/// Lowers the idf of each single-term form of `concept` to what the tools holding it or one of
/// its translations give (`获取`, "get", is rare in a mostly English catalog, but what it
/// means is not, and it must not outweigh the rare words of a query). `term_id` finds a term
/// that some tool holds; `lower` receives each form's term and idf.
pub(super) fn translated_idf(
    concept: u32,
    holders: &Holders<'_>,
    tools: usize,
    term_id: impl Fn(&str) -> Option<u32>,
    mut lower: impl FnMut(u32, f32),
) {
    // The tools holding each form, by language.
    let mut by_language = [ToolSet::new(holders.tools()), ToolSet::new(holders.tools())];
    let mut single_terms: Vec<(u32, Language, ToolSet)> = Vec::new();
    for form in concept_forms(concept) {
        let Some(ids) = form
            .terms
            .iter()
            .map(|t| term_id(t))
            .collect::<Option<Vec<u32>>>()
        else {
            continue;
        };
        // Tools holding every term of the form.
        let mut set = holders.set(ids[0]);
        for &id in &ids[1..] {
            set.intersect(&holders.set(id));
        }
        by_language[form.language as usize].unite(&set);
        if let [single] = ids.as_slice() {
            single_terms.push((*single, form.language, set));
        }
    }
    for (term, language, own) in single_terms {
        let translations = &by_language[1 - language as usize];
        lower(term, bm25::idf(tools, own.union_len(translations)));
    }
}

/// A set of tools, a bit each: the vocabulary's document frequencies unite and intersect the
/// sets of many common words.
struct ToolSet(Vec<u64>);

impl ToolSet {
    fn new(tools: usize) -> Self {
        Self(vec![0; tools.div_ceil(64)])
    }

    fn insert(&mut self, tool: u32) {
        if let Some(word) = self.0.get_mut(tool as usize / 64) {
            *word |= 1 << (tool % 64);
        }
    }

    fn intersect(&mut self, other: &Self) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word &= other;
        }
    }

    fn unite(&mut self, other: &Self) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }

    /// How many tools are in this set or in `other`.
    fn union_len(&self, other: &Self) -> usize {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a | b).count_ones() as usize)
            .sum()
    }
}
