//! The term dictionary: each distinct term of the index and its id, and the terms of tool and
//! group names, sorted for prefix and typo matches. A query reads only this to become terms.

use rustc_hash::FxHashSet;

use crate::keyed_hash::KeyedMap;

#[derive(Debug, Default)]
pub struct Dictionary {
    terms: KeyedMap<Box<str>, u32>,
    /// Terms no tool holds any more (an update removed the last one): kept, so a tool that
    /// brings one back gets its id again, but not found.
    gone: FxHashSet<u32>,
    /// Terms of tool and group names, sorted.
    name_terms: Vec<(Box<str>, u32)>,
}

impl Dictionary {
    /// The id of `term` if some tool holds it.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        let id = self.terms.get(term).copied()?;
        if !self.gone.is_empty() && self.gone.contains(&id) {
            return None;
        }
        Some(id)
    }

    /// Terms of tool and group names, sorted.
    pub fn name_terms(&self) -> &[(Box<str>, u32)] {
        &self.name_terms
    }

    /// The id of `term`, held by a tool or not.
    pub(super) fn any_term_id(&self, term: &str) -> Option<u32> {
        self.terms.get(term).copied()
    }

    pub(super) fn insert(&mut self, term: Box<str>, id: u32) {
        self.terms.insert(term, id);
    }

    /// `name_terms` are those found in names, in any order.
    pub(super) fn set_name_terms(&mut self, mut name_terms: Vec<(Box<str>, u32)>) {
        name_terms.sort_unstable();
        self.name_terms = name_terms;
    }

    /// Whether some tool holds term `id`.
    pub(super) fn set_held(&mut self, id: u32, held: bool) {
        if held {
            self.gone.remove(&id);
        } else {
            self.gone.insert(id);
        }
    }

    /// Whether some tool's or group's name holds term `id` (`text`).
    pub(super) fn set_in_names(&mut self, text: &str, id: u32, in_names: bool) {
        let at = self
            .name_terms
            .binary_search_by(|(t, i)| (&**t, *i).cmp(&(text, id)));
        match (at, in_names) {
            (Err(at), true) => self.name_terms.insert(at, (text.into(), id)),
            (Ok(at), false) => {
                self.name_terms.remove(at);
            }
            _ => {}
        }
    }
}
