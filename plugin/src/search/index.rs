//! The inverted index: built once per registry change (see `build`), read by every query (see
//! `rank`). It holds data and lookups only; it knows nothing of queries.

use super::dictionary::Dictionary;
use super::fields::own_name;
use super::names::{hash, normalise_name};
use super::rows::Rows;

#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Tool names by document id, sorted, so ties break by name.
    pub(super) names: Vec<String>,
    /// The group (MCP server) of each document, as a small number.
    pub(super) groups: Vec<u32>,
    pub(super) dictionary: Dictionary,
    /// Per term, the tools that hold it and its BM25F score in each.
    pub(super) postings: Postings,
    /// Per term, the groups whose name or description holds it, and its BM25F score in each
    /// (`Posting::doc` is a group): a group's text is stored once, not once per tool.
    pub(super) group_postings: Postings,
    pub(super) group_count: usize,
    /// The hash of each tool's normalised whole name and of its normalised own name, with the
    /// tool, sorted (hashes, not strings: ten thousand names need no copies; a match is
    /// checked).
    pub(super) exact: Vec<(u64, u32)>,
    /// Each tool's own name as a sequence of word terms (`get_current_time` -> get, current,
    /// time), for names a query spells out.
    pub(super) name_words: Rows<u32>,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Posting {
    pub doc: u32,
    pub score: f32,
}

/// Per term, the documents that hold it, in order, with its score in each.
pub(super) type Postings = Rows<Posting>;

impl SearchIndex {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The tools whose whole name or own name `text` is, once normalised.
    pub(super) fn exact_matches(&self, text: &str) -> Vec<u32> {
        let wanted = normalise_name(text);
        let wanted_hash = hash(&wanted);
        let first = self.exact.partition_point(|&(hash, _)| hash < wanted_hash);
        self.exact[first..]
            .iter()
            .take_while(|&&(hash, _)| hash == wanted_hash)
            .map(|&(_, doc)| doc)
            .filter(|&doc| {
                let name = &self.names[doc as usize];
                normalise_name(name) == wanted || normalise_name(own_name(name)) == wanted
            })
            .collect()
    }
}
