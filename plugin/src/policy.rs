//! Which tools are deferred, and which rule decided it.
//!
//! Precedence, first match wins (the README and `explain` state the same
//! list): what the user wrote decides before anything the plugin ships.
//! 1. a guard tool, or a tool of the agent's own scope: visible;
//! 2. `deferToolLoading: false`: visible;
//! 3. the user's `neverDefer` entries, then their NoDefer entries: visible;
//! 4. the user's `alwaysDefer` entries: deferred, even under the budget;
//! 5. the user's Defer entries: deferred (with `auto`, only once the agent's
//!    schemas exceed the token budget);
//! 6. only when the user wrote neither `defer` nor `noDefer`, the
//!    zero-config preset: the shipped `neverDefer` and core built-ins
//!    visible, the shipped `alwaysDefer` deferred, then `Defer(*)`, by budget
//!    (the preset's switch is `auto` unless the user wrote one);
//! 7. no rule: visible.

use crate::config::{Action, Config, DeferSwitch, RuleSource};
use crate::guards;
use crate::pattern::PatternSet;

/// Why a tool is visible or deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    Guard,
    OwnScope,
    SwitchOff,
    NeverDefer(RuleSource),
    NoDefer(RuleSource),
    AlwaysDefer(RuleSource),
    Defer(RuleSource),
    NoRule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub deferred: bool,
    /// The deferral holds only while the agent is over its token budget
    /// (`deferToolLoading: auto`).
    pub budgeted: bool,
    pub reason: Reason,
}

impl Decision {
    fn visible(reason: Reason) -> Self {
        Self {
            deferred: false,
            budgeted: false,
            reason,
        }
    }

    fn deferred(reason: Reason, budgeted: bool) -> Self {
        Self {
            deferred: true,
            budgeted,
            reason,
        }
    }

    /// Whether the tool is hidden from an agent that is (or is not) over
    /// its token budget.
    pub fn hides(&self, over_budget: bool) -> bool {
        self.deferred && (!self.budgeted || over_budget)
    }

    /// One line a person understands.
    pub fn describe(&self, tool: &str) -> String {
        let verdict = if self.deferred { "deferred" } else { "visible" };
        let budget = if self.budgeted {
            ", and the agent's schemas exceed the token budget (auto mode)"
        } else {
            ""
        };
        format!("{tool}: {verdict}: {}{budget}", self.why())
    }

    /// Why, as a clause.
    pub fn why(&self) -> String {
        match &self.reason {
            Reason::Guard => "it is one of lazy-tools' own tools, which are never deferred".into(),
            Reason::OwnScope => {
                "it is registered in the agent's own scope, which is never deferred".into()
            }
            Reason::SwitchOff => "deferToolLoading is false, so nothing is deferred".into(),
            Reason::NeverDefer(source) => format!(
                "it matches {} (tools that open a session stay visible)",
                describe_source(source, "neverDefer")
            ),
            Reason::AlwaysDefer(source) => format!(
                "it matches {}, deferred whatever the budget",
                describe_source(source, "alwaysDefer")
            ),
            Reason::NoDefer(source) => format!("it matches {}", describe_source(source, "NoDefer")),
            Reason::Defer(source) => format!("it matches {}", describe_source(source, "Defer")),
            Reason::NoRule => "no Defer rule matches it".into(),
        }
    }

    /// The JSON pointer of the config entry that decided, when the user
    /// wrote it.
    pub fn pointer(&self) -> Option<String> {
        match &self.reason {
            Reason::NeverDefer(source)
            | Reason::NoDefer(source)
            | Reason::AlwaysDefer(source)
            | Reason::Defer(source) => source.pointer(),
            Reason::Guard | Reason::OwnScope | Reason::SwitchOff | Reason::NoRule => None,
        }
    }
}

fn describe_source(source: &RuleSource, action: &str) -> String {
    match source {
        RuleSource::Preset => format!("the zero-config preset's {action} rule"),
        RuleSource::Entry { list, index, text } => {
            format!(
                "the {action} entry {list}[{index}] `{text}` (at {})",
                source.pointer().unwrap_or_default()
            )
        }
    }
}

/// The precedence, as `explain` states it after its answer.
pub const PRECEDENCE: &str = "Precedence, first match wins: 1. lazy-tools' own tools and the \
agent's own-scope tools: visible; 2. deferToolLoading: false: visible; 3. your neverDefer entries, \
then your NoDefer entries: visible; 4. your alwaysDefer entries: deferred; 5. your Defer entries: \
deferred (auto: only over the token budget); 6. with neither defer nor noDefer written, the \
zero-config preset (auto by default): shipped neverDefer and core built-ins visible, shipped \
alwaysDefer deferred, Defer(*) by budget; 7. no rule: visible. A tool the agent's chain does not \
authorize is unavailable whatever the config; a sub-agent loads for itself, whatever its parent \
loaded.";

/// Where a tool stands for one agent (mirrors the WIT `tool-state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Visible,
    Deferred,
    Unavailable,
}

/// The kind of rule that decided (mirrors the WIT `rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Guard,
    AgentScope,
    SwitchOff,
    NeverDefer,
    NoDeferEntry,
    AlwaysDefer,
    DeferEntry,
    Preset,
    Budget,
    NoRule,
    Activated,
    ParentRestriction,
    UnknownTool,
}

/// Why a tool is in its state, for a person (mirrors the WIT
/// `located-explanation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub state: ToolState,
    pub rule: Rule,
    pub summary: String,
    /// JSON pointer of the config entry that decided, when the user wrote it.
    pub pointer: Option<String>,
}

impl Explanation {
    pub fn unavailable(tool: &str, rule: Rule, why: &str) -> Self {
        Self {
            state: ToolState::Unavailable,
            rule,
            summary: format!("{tool}: unavailable: {why}"),
            pointer: None,
        }
    }

    /// The explanation of a classified tool; `activated` says whether the
    /// agent loaded it on demand, `budget` how the agent stands against its
    /// token budget (auto mode).
    pub fn of(tool: &str, decision: &Decision, activated: bool, budget: BudgetStanding) -> Self {
        if decision.deferred && !decision.hides(budget.over) {
            return Self {
                state: ToolState::Visible,
                rule: Rule::Budget,
                summary: format!(
                    "{tool}: visible: deferToolLoading is auto and the agent's schemas take {} tokens, within the budget of {}; otherwise deferred because {}",
                    budget.eager_tokens,
                    budget.budget,
                    decision.why()
                ),
                pointer: decision.pointer(),
            };
        }
        let rule = match &decision.reason {
            Reason::Guard => Rule::Guard,
            Reason::OwnScope => Rule::AgentScope,
            Reason::SwitchOff => Rule::SwitchOff,
            Reason::NeverDefer(RuleSource::Preset)
            | Reason::AlwaysDefer(RuleSource::Preset)
            | Reason::NoDefer(RuleSource::Preset)
            | Reason::Defer(RuleSource::Preset) => Rule::Preset,
            Reason::NeverDefer(_) => Rule::NeverDefer,
            Reason::AlwaysDefer(_) => Rule::AlwaysDefer,
            Reason::NoDefer(RuleSource::Entry { .. }) => Rule::NoDeferEntry,
            Reason::Defer(RuleSource::Entry { .. }) => Rule::DeferEntry,
            Reason::NoRule => Rule::NoRule,
        };
        if decision.deferred && activated {
            return Self {
                state: ToolState::Visible,
                rule: Rule::Activated,
                summary: format!(
                    "{tool}: visible: loaded on demand; it was deferred because {}",
                    decision.why()
                ),
                pointer: decision.pointer(),
            };
        }
        Self {
            state: if decision.deferred {
                ToolState::Deferred
            } else {
                ToolState::Visible
            },
            rule,
            summary: decision.describe(tool),
            pointer: decision.pointer(),
        }
    }
}

/// How an agent stands against its token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetStanding {
    /// Latched: once over, the agent stays over for the session.
    pub over: bool,
    pub eager_tokens: u64,
    pub budget: u32,
}

/// A configuration compiled for fast classification.
#[derive(Debug, Clone)]
pub struct Policy {
    config: Config,
    no_defer: RuleIndex,
    defer: RuleIndex,
}

/// The rules of one action, with a set that matches them all at once.
#[derive(Debug, Clone, Default)]
struct RuleIndex {
    rules: Vec<usize>,
    set: PatternSet,
}

impl RuleIndex {
    fn new(config: &Config, action: Action) -> Self {
        let rules: Vec<usize> = (0..config.rules.len())
            .filter(|&i| config.rules[i].action == action)
            .collect();
        let set = PatternSet::new(rules.iter().map(|&i| &config.rules[i].pattern));
        Self { rules, set }
    }

    fn first_match<'c>(&self, config: &'c Config, name: &str) -> Option<&'c RuleSource> {
        let hit = self.set.first_match(name)?;
        Some(&config.rules[self.rules[hit]].source)
    }
}

impl Policy {
    pub fn new(config: Config) -> Self {
        let no_defer = RuleIndex::new(&config, Action::NoDefer);
        let defer = RuleIndex::new(&config, Action::Defer);
        Self {
            config,
            no_defer,
            defer,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Classifies a tool that the agent inherits; `own_scope` says whether it
    /// is registered in the agent's own scope.
    pub fn classify(&self, name: &str, own_scope: bool) -> Decision {
        if guards::is_guard(name, self.config.strategy) {
            return Decision::visible(Reason::Guard);
        }
        if own_scope {
            return Decision::visible(Reason::OwnScope);
        }
        if self.config.switch == DeferSwitch::Off {
            return Decision::visible(Reason::SwitchOff);
        }
        let config = &self.config;
        let budgeted = config.switch == DeferSwitch::Auto;
        // What the user wrote first: with the preset there are no Defer or
        // NoDefer entries of theirs, and the preset's rules come last.
        let user = !config.preset;
        let decision = config
            .never_defer
            .first_match("neverDefer", name)
            .filter(|s| *s != RuleSource::Preset)
            .map(|s| Decision::visible(Reason::NeverDefer(s)))
            .or_else(|| {
                user.then(|| self.no_defer.first_match(config, name))
                    .flatten()
                    .map(|s| Decision::visible(Reason::NoDefer(s.clone())))
            })
            .or_else(|| {
                config
                    .always_defer
                    .first_match("alwaysDefer", name)
                    .filter(|s| *s != RuleSource::Preset)
                    .map(|s| Decision::deferred(Reason::AlwaysDefer(s), false))
            })
            .or_else(|| {
                user.then(|| self.defer.first_match(config, name))
                    .flatten()
                    .map(|s| Decision::deferred(Reason::Defer(s.clone()), budgeted))
            });
        if let Some(decision) = decision {
            return decision;
        }
        if config.preset {
            if config.never_defer.first_match("neverDefer", name) == Some(RuleSource::Preset) {
                return Decision::visible(Reason::NeverDefer(RuleSource::Preset));
            }
            if self.no_defer.first_match(config, name).is_some() {
                return Decision::visible(Reason::NoDefer(RuleSource::Preset));
            }
            if config.always_defer.first_match("alwaysDefer", name) == Some(RuleSource::Preset) {
                return Decision::deferred(Reason::AlwaysDefer(RuleSource::Preset), false);
            }
            if self.defer.first_match(config, name).is_some() {
                return Decision::deferred(Reason::Defer(RuleSource::Preset), budgeted);
            }
        }
        Decision::visible(Reason::NoRule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(config: serde_json::Value) -> Policy {
        Policy::new(Config::from_value(&config).unwrap())
    }

    #[test]
    fn preset_defers_all_but_core_builtins() {
        let p = policy(json!(null));
        assert!(p.classify("browser_click", false).deferred);
        assert!(!p.classify("bash", false).deferred);
        assert!(!p.classify("web_fetch", false).deferred);
        assert_eq!(
            p.classify("bash", false).reason,
            Reason::NoDefer(RuleSource::Preset)
        );
    }

    #[test]
    fn no_defer_beats_defer_in_either_list() {
        let p = policy(json!({"defer": ["Defer(*)", "NoDefer(git_*)"], "noDefer": ["read"]}));
        assert!(p.classify("x", false).deferred);
        assert!(!p.classify("git_log", false).deferred);
        assert!(!p.classify("read", false).deferred);
        let p = policy(json!({"noDefer": ["Defer(a*)", "abc"]}));
        assert!(p.classify("abd", false).deferred);
        assert!(!p.classify("abc", false).deferred);
    }

    #[test]
    fn guards_and_own_scope_are_never_deferred() {
        let p = policy(json!({"defer": ["*", "tool_search"]}));
        assert!(!p.classify("tool_search", false).deferred);
        assert!(!p.classify("defer_execute_tool", false).deferred);
        assert_eq!(p.classify("mine", true).reason, Reason::OwnScope);
    }

    #[test]
    fn switch_off_and_empty_defer_defer_nothing() {
        let p = policy(json!({"deferToolLoading": false}));
        assert_eq!(p.classify("x", false).reason, Reason::SwitchOff);
        let p = policy(json!({"defer": []}));
        assert_eq!(p.classify("x", false).reason, Reason::NoRule);
        assert!(!p.classify("x", false).deferred);
    }

    #[test]
    fn what_the_user_wrote_beats_what_the_plugin_ships() {
        // `Defer(*)` defers web_search: the shipped neverDefer is the preset's.
        let p = policy(json!({"defer": ["Defer(*)"]}));
        assert!(p.classify("web_search", false).deferred);
        // `defer: []` defers nothing, browser tools included.
        let p = policy(json!({"defer": []}));
        assert!(!p.classify("pw__browser_click", false).deferred);
        // Keys the user wrote keep their precedence among themselves.
        let p = policy(json!({
            "deferToolLoading": "auto", "defer": ["*"], "noDefer": ["pw__browser_type"],
            "alwaysDefer": ["*browser_*"], "neverDefer": ["web_fetch"],
        }));
        let click = p.classify("pw__browser_click", false);
        assert!(
            click.deferred && !click.budgeted,
            "always deferred: {click:?}"
        );
        assert!(click.hides(false));
        let other = p.classify("gh__x", false);
        assert!(other.budgeted && !other.hides(false) && other.hides(true));
        assert!(!p.classify("pw__browser_type", false).deferred);
        assert_eq!(
            p.classify("web_fetch", false).pointer().as_deref(),
            Some("/neverDefer/0")
        );
    }

    #[test]
    fn the_preset_decides_by_budget_after_the_users_entries() {
        let p = policy(json!(null));
        assert_eq!(p.config().switch, DeferSwitch::Auto);
        let gh = p.classify("gh__x", false);
        assert!(gh.budgeted && gh.reason == Reason::Defer(RuleSource::Preset));
        assert_eq!(gh.pointer(), None);
        let web = p.classify("web_search", false);
        assert_eq!(web.reason, Reason::NeverDefer(RuleSource::Preset));
        // A user's alwaysDefer decides before the preset's core built-ins.
        let p = policy(json!({"alwaysDefer": ["bash"]}));
        assert!(p.classify("bash", false).hides(false));
        assert!(p.classify("read", false).reason == Reason::NoDefer(RuleSource::Preset));
        // Writing the switch keeps it.
        let p = policy(json!({"deferToolLoading": true}));
        assert!(!p.classify("gh__x", false).budgeted);
    }

    #[test]
    fn describe_names_the_entry() {
        let p = policy(json!({"noDefer": ["bash", "git_*"]}));
        let line = p.classify("git_log", false).describe("git_log");
        assert_eq!(
            line,
            "git_log: visible: it matches the NoDefer entry noDefer[1] `git_*` (at /noDefer/1)"
        );
    }
}
