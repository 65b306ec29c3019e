//! Per-agent state: what the agent may call, what it has activated, and the
//! allow set this plugin installed for it.

use std::collections::{BTreeSet, HashSet};

use crate::policy::{BudgetStanding, Decision};

/// A rendered catalog and the state it was rendered from: the host's tools
/// generation and the budget latch. Loading a tool never changes the text,
/// and a new config clears the cache, so nothing else can make it stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogCache {
    pub generation: Option<u64>,
    pub over_budget: bool,
    pub text: Option<String>,
}

#[derive(Debug, Default)]
pub struct AgentState {
    pub parent: Option<String>,
    /// Tools loaded on demand. Kept across registry changes and
    /// reconfiguration: a tool that leaves and comes back is still loaded.
    pub activated: BTreeSet<String>,
    /// The host's answer to "what may this agent call", as of the last refresh.
    allowed: HashSet<String>,
    /// Allowed tools the model sees: not deferred, or activated.
    visible: Vec<String>,
    /// Allowed tools that are deferred and not activated.
    pending: HashSet<String>,
    /// The allow set this plugin has installed (`None`: none installed).
    installed: Option<Vec<String>>,
    /// Auto mode: how the agent stands against its token budget. Latched:
    /// once over, it stays over, so tools that come and go never toggle
    /// the others back and forth.
    pub budget: BudgetStanding,
    /// The last system-prompt catalog, with what it was computed from.
    pub catalog: Option<CatalogCache>,
    /// The host's tools generation at the last refresh (`None`: never).
    pub seen_generation: Option<u64>,
}

impl AgentState {
    pub fn new(parent: Option<String>) -> Self {
        Self {
            parent,
            ..Self::default()
        }
    }

    /// Recomputes the view from the host's allowed list (in the host's
    /// order) and each name's decision, in the same order.
    pub fn update(&mut self, allowed: Vec<String>, decisions: &[Decision]) {
        self.visible.clear();
        self.pending.clear();
        for (name, decision) in allowed.iter().zip(decisions) {
            if !decision.hides(self.budget.over) || self.activated.contains(name) {
                self.visible.push(name.clone());
            } else {
                self.pending.insert(name.clone());
            }
        }
        self.allowed = allowed.into_iter().collect();
    }

    pub fn visible(&self) -> &[String] {
        &self.visible
    }

    /// The names the agent may call, in no particular order.
    pub fn allowed_names(&self) -> impl Iterator<Item = &str> {
        self.allowed.iter().map(String::as_str)
    }

    pub fn is_allowed(&self, name: &str) -> bool {
        self.allowed.contains(name)
    }

    /// Deferred, allowed and not activated: what a search may load.
    pub fn is_pending(&self, name: &str) -> bool {
        self.pending.contains(name)
    }

    pub fn pending_names(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(String::as_str)
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// Marks a pending tool activated. Returns false when it was not pending.
    pub fn activate(&mut self, name: &str) -> bool {
        if !self.pending.remove(name) {
            return false;
        }
        self.activated.insert(name.to_string());
        self.visible.push(name.to_string());
        true
    }

    /// The allow set this agent should have: none when nothing is hidden,
    /// so a plugin with nothing to defer leaves the agent untouched.
    pub fn wanted_allow_set(&self) -> Option<Vec<String>> {
        if self.pending.is_empty() {
            return None;
        }
        let mut allow = self.visible.clone();
        allow.sort();
        Some(allow)
    }

    pub fn installed(&self) -> Option<&[String]> {
        self.installed.as_deref()
    }

    pub fn set_installed(&mut self, allow: Option<Vec<String>>) {
        self.installed = allow;
    }
}
