//! Per-agent state: what the agent may call, what it has loaded, and the
//! exposure layer this plugin installed for it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

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
    /// Tools loaded on demand, by name, with the fingerprint of the
    /// definition that was loaded (name, description, parameters). Kept
    /// across registry changes and reconfiguration: a tool that leaves and
    /// comes back unchanged is still loaded; one that comes back changed is
    /// deferred again until loaded again.
    activated: BTreeMap<String, u64>,
    /// Loaded tools whose definition has changed since: deferred again.
    lapsed: HashSet<String>,
    /// The host's answer to "what may this agent call", as of the last refresh.
    allowed: HashSet<String>,
    /// Allowed tools the model sees: not deferred, or activated.
    visible: Vec<String>,
    /// Allowed tools the policy does not defer: the tools array of the
    /// `dispatch` strategy, which loading never changes.
    base_visible: Vec<String>,
    /// Allowed tools the policy defers, loaded or not.
    deferred: BTreeSet<String>,
    /// Allowed tools that are deferred and not activated.
    pending: HashSet<String>,
    /// The exposure layer this plugin has installed (`None`: none installed).
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
    /// A fork starts with what `source` loaded and how it stood against its
    /// budget; a fresh agent (`Default`) starts cold.
    pub fn fork_of(source: &AgentState) -> Self {
        Self {
            activated: source.activated.clone(),
            budget: source.budget,
            ..Self::default()
        }
    }

    /// Whether the view was computed at the host's current `generation`:
    /// nothing the agent may call can have changed since.
    pub fn is_fresh(&self, generation: u64) -> bool {
        self.seen_generation == Some(generation)
    }

    /// Recomputes the view from the host's allowed list (in the host's
    /// order) and each name's decision, in the same order. `fingerprint`
    /// gives the fingerprint of the definition the agent sees under a name.
    pub fn update(
        &mut self,
        allowed: Vec<String>,
        decisions: &[Decision],
        fingerprint: impl Fn(&str) -> Option<u64>,
    ) {
        self.visible.clear();
        self.base_visible.clear();
        self.deferred.clear();
        self.pending.clear();
        self.lapsed.clear();
        for (name, decision) in allowed.iter().zip(decisions) {
            if !decision.hides(self.budget.over) {
                self.visible.push(name.clone());
                self.base_visible.push(name.clone());
                continue;
            }
            self.deferred.insert(name.clone());
            match self.activated.get(name) {
                Some(loaded) if fingerprint(name) == Some(*loaded) => {
                    self.visible.push(name.clone())
                }
                Some(_) => {
                    self.lapsed.insert(name.clone());
                    self.pending.insert(name.clone());
                }
                None => {
                    self.pending.insert(name.clone());
                }
            }
        }
        self.allowed = allowed.into_iter().collect();
    }

    /// What the model may call: the tools the policy shows and those loaded.
    pub fn visible(&self) -> &[String] {
        &self.visible
    }

    /// The tools the policy shows, whatever is loaded.
    pub fn base_visible(&self) -> &[String] {
        &self.base_visible
    }

    /// The allowed tools the policy defers, loaded or not, sorted.
    pub fn deferred(&self) -> BTreeSet<&str> {
        self.deferred.iter().map(String::as_str).collect()
    }

    /// Every tool loaded on demand with the fingerprint of its definition
    /// (lapsed ones included: they hold the definition that was loaded).
    pub fn loads(&self) -> &BTreeMap<String, u64> {
        &self.activated
    }

    /// Adds loads saved by an earlier run; they count from the next
    /// refresh, for the definitions they were made for.
    pub fn restore(&mut self, loads: BTreeMap<String, u64>) {
        self.activated.extend(loads);
    }

    /// The names the agent may call, in no particular order.
    pub fn allowed_names(&self) -> impl Iterator<Item = &str> {
        self.allowed.iter().map(String::as_str)
    }

    pub fn is_allowed(&self, name: &str) -> bool {
        self.allowed.contains(name)
    }

    /// Loaded on demand, with the definition the agent sees now.
    pub fn is_activated(&self, name: &str) -> bool {
        self.activated.contains_key(name) && !self.lapsed.contains(name)
    }

    /// Loaded once, but its definition changed since: deferred again.
    pub fn is_lapsed(&self, name: &str) -> bool {
        self.lapsed.contains(name)
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

    /// Marks a pending tool activated with the fingerprint of the definition
    /// being loaded. Returns false when it was not pending.
    pub fn activate(&mut self, name: &str, fingerprint: u64) -> bool {
        if !self.pending.remove(name) {
            return false;
        }
        self.lapsed.remove(name);
        self.activated.insert(name.to_string(), fingerprint);
        self.visible.push(name.to_string());
        true
    }

    /// The exposure layer this agent should have: none when nothing is
    /// hidden, so a plugin with nothing to defer leaves the agent untouched.
    pub fn wanted_exposure(&self) -> Option<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Reason;

    fn deferred() -> Decision {
        Decision {
            deferred: true,
            budgeted: false,
            reason: Reason::NoRule,
        }
    }

    #[test]
    fn an_activation_holds_for_its_definition_only() {
        let mut state = AgentState::default();
        let names = || vec!["a".to_string()];
        state.update(names(), &[deferred()], |_| Some(1));
        assert!(state.activate("a", 1));
        state.update(names(), &[deferred()], |_| Some(1));
        assert_eq!(state.visible(), ["a"]);
        state.update(names(), &[deferred()], |_| Some(2));
        assert!(state.is_pending("a") && state.is_lapsed("a") && !state.is_activated("a"));
        assert!(state.activate("a", 2));
        assert!(!state.is_lapsed("a") && state.is_activated("a"));
    }

    #[test]
    fn a_fork_starts_with_the_sources_activations() {
        let mut source = AgentState::default();
        source.update(
            vec!["a".into(), "b".into()],
            &[deferred(), deferred()],
            |_| Some(1),
        );
        source.activate("a", 1);
        let mut fork = AgentState::fork_of(&source);
        fork.update(
            vec!["a".into(), "b".into()],
            &[deferred(), deferred()],
            |_| Some(1),
        );
        assert_eq!(fork.visible(), ["a"]);
        assert!(fork.is_pending("b"));
    }
}
