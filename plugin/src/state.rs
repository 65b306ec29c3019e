//! Per-agent state: what the agent may call, what it has loaded, and the
//! exposure layer this plugin installed for it.

use std::collections::BTreeMap;

use crate::names::{NameId, NameSet, NameTable};
use crate::policy::BudgetStanding;

/// A rendered catalog and the state it was rendered from: the host's tools
/// generation and the budget latch. Loading a tool never changes the text; a
/// new config, and groups described or declared anew (which move no agent's
/// generation), clear the cache.
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
    lapsed: NameSet,
    /// The host's answer to "what may this agent call", as of the last refresh.
    allowed: NameSet,
    /// Allowed tools the model sees: not deferred, or activated.
    visible: NameSet,
    /// Allowed tools the policy does not defer: the tools array of the
    /// `dispatch` strategy, which loading never changes.
    base_visible: NameSet,
    /// Allowed tools the policy defers, loaded or not.
    deferred: NameSet,
    /// Allowed tools that are deferred and not activated.
    pending: NameSet,
    /// The exposure layer this plugin has installed (`None`: none installed).
    installed: Option<NameSet>,
    /// Auto mode: how the agent stands against its token budget. Latched:
    /// once over, it stays over, so tools that come and go never toggle
    /// the others back and forth.
    pub budget: BudgetStanding,
    /// The last system-prompt catalog, with what it was computed from.
    pub catalog: Option<CatalogCache>,
    /// The host's generation for this agent at the last refresh (`None`:
    /// never, or the view was dropped).
    pub seen_generation: Option<u64>,
    /// The epoch of the plugin's registry copy at the last refresh (see `copy_log.rs`).
    pub seen_copy: u64,
    /// When this run created the agent, counted from 0: a save that cannot keep every agent
    /// keeps those nearest the root first, and of those the earliest created.
    pub created: u64,
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

    /// Recomputes the view from the host's allowed names, each with whether
    /// the policy hides it from this agent. `fingerprint` gives the
    /// fingerprint of the definition the agent sees under a name.
    pub fn update(
        &mut self,
        allowed: impl IntoIterator<Item = (NameId, bool)>,
        names: &NameTable,
        fingerprint: impl Fn(&str) -> Option<u64>,
    ) {
        for set in self.view_sets() {
            set.make_empty();
        }
        for (id, hidden) in allowed {
            self.place(id, hidden, names, &fingerprint);
        }
    }

    /// Recomputes the view of the `changed` names only, each with whether the
    /// policy hides it (`None`: the agent may not call it); the others stay.
    pub fn patch(
        &mut self,
        changed: impl IntoIterator<Item = (NameId, Option<bool>)>,
        names: &NameTable,
        fingerprint: impl Fn(&str) -> Option<u64>,
    ) {
        for (id, hidden) in changed {
            for set in self.view_sets() {
                set.remove(id);
            }
            if let Some(hidden) = hidden {
                self.place(id, hidden, names, &fingerprint);
            }
        }
    }

    /// Adds an allowed name, absent from every set of the view.
    fn place(
        &mut self,
        id: NameId,
        hidden: bool,
        names: &NameTable,
        fingerprint: &impl Fn(&str) -> Option<u64>,
    ) {
        self.allowed.insert(id);
        if !hidden {
            self.visible.insert(id);
            self.base_visible.insert(id);
            return;
        }
        self.deferred.insert(id);
        let name = names.name(id);
        match self.activated.get(name) {
            Some(loaded) if fingerprint(name) == Some(*loaded) => {
                self.visible.insert(id);
            }
            Some(_) => {
                self.lapsed.insert(id);
                self.pending.insert(id);
            }
            None => {
                self.pending.insert(id);
            }
        }
    }

    /// Every set the view is made of (not the loads, not the installed layer).
    fn view_sets(&mut self) -> [&mut NameSet; 6] {
        [
            &mut self.allowed,
            &mut self.visible,
            &mut self.base_visible,
            &mut self.deferred,
            &mut self.pending,
            &mut self.lapsed,
        ]
    }

    /// Forgets the view (not the loads) and gives its memory back: the next
    /// use refreshes it. For when names are renumbered from `old` to `new`:
    /// the installed layer is renumbered, since the host still has it.
    pub fn drop_view(&mut self, old: &NameTable, new: &mut NameTable) {
        for set in self.view_sets() {
            set.clear();
        }
        if let Some(installed) = &mut self.installed {
            let mut renumbered = NameSet::default();
            for id in installed.iter() {
                renumbered.insert(new.intern(old.name(id)));
            }
            *installed = renumbered;
        }
        self.catalog = None;
        self.seen_generation = None;
    }

    /// What the model may call: the tools the policy shows and those loaded.
    pub fn visible(&self) -> &NameSet {
        &self.visible
    }

    /// The tools the policy shows, whatever is loaded.
    pub fn base_visible(&self) -> &NameSet {
        &self.base_visible
    }

    /// The allowed tools the policy defers, loaded or not.
    pub fn deferred(&self) -> &NameSet {
        &self.deferred
    }

    /// Every tool loaded on demand with the fingerprint of its definition
    /// (lapsed ones included: they hold the definition that was loaded).
    pub fn loads(&self) -> &BTreeMap<String, u64> {
        &self.activated
    }

    /// Adds loads saved by an earlier run; they count from the next
    /// refresh, for the definitions they were made for. A tool this run
    /// loaded keeps its load (a saved one, for an older definition, lapsed
    /// it), unless the saved one is for the definition the agent sees now
    /// (`current`, as [`AgentState::update`] takes it) and this run's is not.
    pub fn restore(&mut self, loads: BTreeMap<String, u64>, current: impl Fn(&str) -> Option<u64>) {
        for (name, fingerprint) in loads {
            match self.activated.get_mut(&name) {
                Some(held) => {
                    if *held != fingerprint && current(&name) == Some(fingerprint) {
                        *held = fingerprint;
                    }
                }
                None => {
                    self.activated.insert(name, fingerprint);
                }
            }
        }
    }

    /// The names the agent may call.
    pub fn allowed(&self) -> &NameSet {
        &self.allowed
    }

    /// Loaded on demand, with the definition the agent sees now.
    pub fn is_activated(&self, name: &str, id: Option<NameId>) -> bool {
        self.activated.contains_key(name) && !id.is_some_and(|id| self.lapsed.contains(id))
    }

    /// Loaded once, but its definition changed since: deferred again.
    pub fn is_lapsed(&self, id: NameId) -> bool {
        self.lapsed.contains(id)
    }

    /// Deferred, allowed and not activated: what a search may load.
    pub fn is_pending(&self, id: NameId) -> bool {
        self.pending.contains(id)
    }

    pub fn pending(&self) -> &NameSet {
        &self.pending
    }

    /// Marks a pending tool activated with the fingerprint of the definition
    /// being loaded. Returns false when it was not pending.
    pub fn activate(&mut self, id: NameId, name: &str, fingerprint: u64) -> bool {
        if !self.pending.remove(id) {
            return false;
        }
        self.lapsed.remove(id);
        self.activated.insert(name.to_string(), fingerprint);
        self.visible.insert(id);
        true
    }

    /// The exposure layer this agent should have: none when nothing is
    /// hidden, so a plugin with nothing to defer leaves the agent untouched.
    pub fn wanted_exposure(&self) -> Option<&NameSet> {
        (!self.pending.is_empty()).then_some(&self.visible)
    }

    pub fn installed(&self) -> Option<&NameSet> {
        self.installed.as_ref()
    }

    pub fn set_installed(&mut self, allow: Option<NameSet>) {
        self.installed = allow;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> (NameTable, Vec<NameId>) {
        let mut table = NameTable::default();
        let ids = list.iter().map(|n| table.intern(n)).collect();
        (table, ids)
    }

    fn visible(state: &AgentState, table: &NameTable) -> Vec<String> {
        state
            .visible()
            .iter()
            .map(|id| table.name(id).to_string())
            .collect()
    }

    #[test]
    fn an_activation_holds_for_its_definition_only() {
        let (table, ids) = names(&["a"]);
        let a = ids[0];
        let mut state = AgentState::default();
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(1));
        assert!(state.activate(a, "a", 1));
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(1));
        assert_eq!(visible(&state, &table), ["a"]);
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(2));
        assert!(state.is_pending(a) && state.is_lapsed(a) && !state.is_activated("a", Some(a)));
        assert!(state.activate(a, "a", 2));
        assert!(!state.is_lapsed(a) && state.is_activated("a", Some(a)));
    }

    /// A restore adds what this run did not load, and keeps what it did unless the saved load
    /// is for the definition seen now and this run's is not: a saved load of an older
    /// definition took the place of this run's, and lapsed it.
    #[test]
    fn a_restore_keeps_this_runs_loads() {
        let (table, ids) = names(&["a", "b"]);
        let mut state = AgentState::default();
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(2));
        assert!(state.activate(ids[0], "a", 2));
        state.restore(
            BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]),
            |_| Some(2),
        );
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(2));
        assert_eq!(visible(&state, &table), ["a", "b"]);
        assert!(!state.is_lapsed(ids[0]));

        // A load of this run that lapsed (its tool is at definition 3 now) takes a saved load
        // of the definition registered now.
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(3));
        assert!(state.is_lapsed(ids[0]));
        state.restore(BTreeMap::from([("a".to_string(), 3)]), |_| Some(3));
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(3));
        assert!(!state.is_lapsed(ids[0]));
        assert_eq!(visible(&state, &table), ["a"]);
    }

    #[test]
    fn a_patch_is_the_update_with_the_same_answer() {
        let (table, ids) = names(&["a", "b", "c", "d"]);
        let (a, b, c, d) = (ids[0], ids[1], ids[2], ids[3]);
        let mut patched = AgentState::default();
        patched.update([(a, true), (b, false), (c, true)], &table, |_| Some(1));
        assert!(patched.activate(a, "a", 1));
        // `a` changed definition, `b` left, `c` is now shown, `d` joined hidden.
        let fingerprint = |name: &str| Some(if name == "a" { 2 } else { 1 });
        patched.patch(
            [
                (a, Some(true)),
                (b, None),
                (c, Some(false)),
                (d, Some(true)),
            ],
            &table,
            fingerprint,
        );
        let mut whole = AgentState::default();
        whole.restore(patched.loads().clone(), |_| None);
        whole.update([(a, true), (c, false), (d, true)], &table, fingerprint);
        for (mine, theirs) in patched.view_sets().into_iter().zip(whole.view_sets()) {
            assert_eq!(*mine, *theirs);
        }
        assert!(patched.is_lapsed(a) && patched.is_pending(d));
    }

    #[test]
    fn a_fork_starts_with_the_sources_activations() {
        let (table, ids) = names(&["a", "b"]);
        let mut source = AgentState::default();
        source.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(1));
        source.activate(ids[0], "a", 1);
        let mut fork = AgentState::fork_of(&source);
        fork.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(1));
        assert_eq!(visible(&fork, &table), ["a"]);
        assert!(fork.is_pending(ids[1]));
    }

    #[test]
    fn a_dropped_view_keeps_the_loads_and_asks_for_a_refresh() {
        let (table, ids) = names(&["a", "b"]);
        let mut state = AgentState::default();
        state.update(ids.iter().map(|&id| (id, true)), &table, |_| Some(1));
        state.activate(ids[0], "a", 1);
        state.seen_generation = Some(7);
        state.set_installed(Some(state.visible().clone()));
        let mut renumbered = NameTable::default();
        renumbered.intern("z");
        state.drop_view(&table, &mut renumbered);
        assert!(!state.is_fresh(7));
        let installed: Vec<&str> = state
            .installed()
            .unwrap()
            .iter()
            .map(|id| renumbered.name(id))
            .collect();
        assert_eq!(installed, ["a"]);
        assert!(state.pending().is_empty() && state.allowed().is_empty());
        assert_eq!(state.loads().get("a"), Some(&1));
    }
}
