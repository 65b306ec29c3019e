//! The term dictionary: each distinct term of the index and its id, and the terms of tool and
//! group names, sorted for prefix and typo matches. A query reads only this to become terms.

use rustc_hash::FxHashMap;

#[derive(Debug, Default)]
pub struct Dictionary {
    terms: FxHashMap<Box<str>, u32>,
    /// Terms of tool and group names, sorted.
    name_terms: Vec<(Box<str>, u32)>,
}

impl Dictionary {
    /// `terms` maps each term to its id; `name_terms` are those found in names, in any order.
    pub fn new(terms: FxHashMap<Box<str>, u32>, mut name_terms: Vec<(Box<str>, u32)>) -> Self {
        name_terms.sort_unstable();
        Self { terms, name_terms }
    }

    pub fn term_id(&self, term: &str) -> Option<u32> {
        self.terms.get(term).copied()
    }

    /// Terms of tool and group names, sorted.
    pub fn name_terms(&self) -> &[(Box<str>, u32)] {
        &self.name_terms
    }
}
