//! What a registered name is to an agent, cached by name number for the names whose every
//! definition is global (an MCP server's or a built-in: no agent has one in its own scope),
//! which is almost every name. Such a name is the same to every agent: its class and the cost
//! of the schema it shows do not depend on who asks.
//!
//! An agent's whole refresh reads one entry per allowed name here. Without it, each name was
//! looked up by its text five times (the registry twice, the classes, the costs, the name
//! table): at 10,000 tools that was most of creating an agent in the component, where each
//! string comparison is a call to wasi-libc's byte-by-byte `memcmp`.
//!
//! The owner forgets a name's entry whenever the name's definitions change (a name the copy
//! does not hold yet is global too, until it is registered), and every entry on a new config,
//! a new numbering or a whole new registry.

use crate::names::NameId;
use crate::policy::Decision;

/// What hiding and budgeting need of one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameFacts {
    /// Whether the policy hides it from an agent under its budget, and over it.
    hidden: [bool; 2],
    /// The tokens its schema counts against a budget (0 when nothing is weighed).
    pub cost: u64,
}

impl NameFacts {
    /// The facts of a name the policy decided (`None`: no policy yet, nothing hidden).
    pub fn new(decision: Option<&Decision>, cost: u64) -> Self {
        let hides = |over| decision.is_some_and(|d| d.hides(over));
        Self {
            hidden: [hides(false), hides(true)],
            cost,
        }
    }

    /// Whether the tool is hidden from an agent that is (or is not) over its budget.
    pub fn hides(&self, over_budget: bool) -> bool {
        self.hidden[usize::from(over_budget)]
    }
}

/// [`NameFacts`] of global names, by name number; `None` where not known yet.
#[derive(Debug, Default)]
pub struct FactsCache {
    by_id: Vec<Option<NameFacts>>,
}

impl FactsCache {
    pub fn get(&self, id: NameId) -> Option<NameFacts> {
        self.by_id.get(id.index()).copied().flatten()
    }

    pub fn insert(&mut self, id: NameId, facts: NameFacts) {
        let at = id.index();
        if at >= self.by_id.len() {
            self.by_id.resize(at + 1, None);
        }
        self.by_id[at] = Some(facts);
    }

    /// Forgets one name (its definitions changed).
    pub fn forget(&mut self, id: NameId) {
        if let Some(entry) = self.by_id.get_mut(id.index()) {
            *entry = None;
        }
    }

    /// Forgets every name (a new config, a new numbering, a whole new registry).
    pub fn clear(&mut self) {
        self.by_id.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::NameTable;

    #[test]
    fn an_entry_lives_until_forgotten() {
        let mut names = NameTable::default();
        let (a, b) = (names.intern("a"), names.intern("b"));
        let facts = NameFacts::new(None, 7);
        let mut cache = FactsCache::default();
        assert_eq!(cache.get(b), None);
        cache.insert(b, facts);
        assert_eq!((cache.get(a), cache.get(b)), (None, Some(facts)));
        cache.forget(b);
        assert_eq!(cache.get(b), None);
        cache.insert(a, facts);
        cache.clear();
        assert_eq!(cache.get(a), None);
    }
}
