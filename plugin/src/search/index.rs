//! The inverted index: built once per registry change (see `build`), grown by small changes
//! (see `update`), read by every query (see `rank`). It holds data and lookups only; it knows
//! nothing of queries.
//!
//! Like a search engine's segments, a full build writes one packed segment; tools added after
//! it go to a second, small one (new document ids), and removed tools stay in place, marked
//! removed, until the next full build.

use super::dictionary::Dictionary;
use super::growth::Growth;
use super::names::{name_key, normalise_name};
use super::rows::Rows;

#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Tool names by document id: sorted in the full build, then the tools added since.
    pub(super) names: Vec<String>,
    /// The group (MCP server) of each document, as a small number.
    pub(super) groups: Vec<u32>,
    pub(super) dictionary: Dictionary,
    /// Per term, its inverse document frequency: a posting's score times this is the term's
    /// BM25F score in that document.
    pub(super) idf: Vec<f32>,
    /// Per term, the tools of the full build that hold it and its saturated weighted
    /// frequency in each.
    pub(super) postings: Postings,
    /// The same for the tools added since the full build.
    pub(super) added: Postings,
    /// Per term, the groups whose name or description holds it, and its saturated frequency
    /// in each (`Posting::doc` is a group): a group's text is stored once, not once per tool.
    pub(super) group_postings: Postings,
    pub(super) group_count: usize,
    /// The hash of each tool's normalised whole name and of its normalised own name, with the
    /// tool, sorted (hashes, not strings: ten thousand names need no copies; a match is
    /// checked).
    pub(super) exact: Vec<(u64, u32)>,
    /// The same for the tools added since the full build and not removed, unsorted (few).
    pub(super) exact_added: Vec<(u64, u32)>,
    /// Each tool's own name as a sequence of word terms (`get_current_time` -> get, current,
    /// time), for names a query spells out.
    pub(super) name_words: Rows<u32>,
    /// Each tool's place in name order: equal scores go to the smaller name, wherever an
    /// update put the tool.
    pub(super) order: Vec<u64>,
    /// Tools removed (or replaced by a newer definition) since the full build.
    pub(super) removed: Vec<bool>,
    pub(super) removed_count: usize,
    /// What an update needs to grow the index without a full build.
    pub(super) growth: Growth,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Posting {
    pub doc: u32,
    pub score: f32,
}

/// Per term, the documents that hold it, in order, with its score in each.
pub(super) type Postings = Rows<Posting>;

impl SearchIndex {
    /// How many tools the index finds.
    pub fn len(&self) -> usize {
        self.names.len() - self.removed_count
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn is_removed(&self, doc: u32) -> bool {
        self.removed.get(doc as usize).copied().unwrap_or(true)
    }

    /// The tools whose whole name or own name `text` is, once normalised; each once.
    pub(super) fn exact_matches(&self, text: &str) -> Vec<u32> {
        let wanted = normalise_name(text);
        let wanted_hash = name_key(&wanted);
        let first = self.exact.partition_point(|&(hash, _)| hash < wanted_hash);
        let built = self.exact[first..]
            .iter()
            .take_while(|&&(hash, _)| hash == wanted_hash);
        let added = self
            .exact_added
            .iter()
            .filter(|&&(hash, _)| hash == wanted_hash);
        let mut matches = built
            .chain(added)
            .map(|&(_, doc)| doc)
            .filter(|&doc| {
                // A key's name (a hash may collide): the whole name, or a part of it after a
                // `__` (its own names, see `exact_keys`).
                let name = normalise_name(&self.names[doc as usize]);
                !self.is_removed(doc)
                    && (name == wanted
                        || name
                            .strip_suffix(wanted.as_str())
                            .is_some_and(|front| front.ends_with('_')))
            })
            .collect::<Vec<u32>>();
        // Ranking takes each tool once (`rank::select`).
        matches.sort_unstable();
        matches.dedup();
        matches
    }
}
