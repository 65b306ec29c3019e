//! The plugin itself, independent of WIT: lifecycle, pre-execute, the guard
//! tools and the exposure layers it installs through the [`Host`].

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::json;

use crate::catalog::{self, Entry};
use crate::config::{CatalogMode, Config, ConfigError, DeferSwitch};
use crate::guards::{
    self, ActivateArgs, ActivateOutput, DEFAULT_TOP_K, MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K,
    Match, SearchArgs, SearchOutput, Status,
};
use crate::host::{Host, LogLevel};
use crate::policy::{BudgetStanding, Decision, Explanation, Policy, Rule};
use crate::registry::{Registry, ToolDef};
use crate::search::SearchIndex;
use crate::state::{AgentState, CatalogCache};
use crate::suggest;
use crate::tokens::{TokenCosts, estimate_tokens};

/// Misuse by the host (mirrors the WIT `plugin-error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("lazy-tools is not configured yet")]
    NotConfigured,
    #[error("unknown agent `{0}`")]
    UnknownAgent(String),
    #[error("`{0}` is not a lazy-tools tool")]
    UnknownTool(String),
    #[error("the host refused: {0}")]
    Host(String),
}

/// The answer of the pre-execute hook (mirrors the WIT `verdict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Deny(String),
}

/// The result of a guard tool (mirrors the WIT `tool-result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub json: String,
    pub text: String,
    pub is_error: bool,
}

impl ToolResult {
    fn ok(value: &impl Serialize, text: String) -> Self {
        Self {
            json: serde_json::to_string(value)
                .unwrap_or_else(|e| json!({"error": e.to_string()}).to_string()),
            text,
            is_error: false,
        }
    }

    fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            json: json!({ "error": message }).to_string(),
            text: message,
            is_error: true,
        }
    }
}

pub struct LazyTools<H: Host> {
    host: H,
    policy: Option<Policy>,
    registry: Registry,
    /// Each registered name classified as an inherited tool; rebuilt on every
    /// registry or config change so requests only look names up.
    classes: HashMap<String, Decision>,
    index: SearchIndex,
    /// Schema token costs; counted only when a budget needs them.
    costs: TokenCosts,
    agents: BTreeMap<String, AgentState>,
}

impl<H: Host> LazyTools<H> {
    pub fn new(host: H) -> Self {
        Self {
            host,
            policy: None,
            registry: Registry::default(),
            classes: HashMap::new(),
            index: SearchIndex::default(),
            costs: TokenCosts::default(),
            agents: BTreeMap::new(),
        }
    }

    pub fn host(&self) -> &H {
        &self.host
    }

    /// Applies a new configuration; on error the previous one stays in force.
    pub fn configure(&mut self, config_json: &str) -> Result<(), Vec<ConfigError>> {
        let config = Config::from_json(config_json)?;
        let policy = Policy::new(config).map_err(|message| {
            vec![ConfigError {
                pointer: String::new(),
                entry: None,
                message,
            }]
        })?;
        let first = self.policy.is_none();
        self.policy = Some(policy);
        // A new config is a new decision: the budget is weighed afresh.
        for state in self.agents.values_mut() {
            state.budget = BudgetStanding::default();
            state.catalog = None;
        }
        if first {
            self.load_registry();
        } else {
            self.classify_all(HashMap::new());
            self.count_costs();
        }
        self.refresh_all();
        Ok(())
    }

    pub fn guard_tools(&self) -> Vec<ToolDef> {
        guards::definitions()
    }

    /// A fresh agent starts with nothing loaded, whatever its parent loaded:
    /// exposure is per agent, only authorization is inherited (the host's
    /// `allowed-tools` carries it). The parent is the host's business.
    pub fn agent_created(&mut self, agent: &str, _parent: Option<&str>) -> Result<(), PluginError> {
        self.policy()?;
        self.agents.entry(agent.to_string()).or_default();
        self.refresh(agent)
    }

    /// A fork continues `source`'s conversation: it starts with what
    /// `source` loaded, as far as its own chain authorizes.
    pub fn agent_forked(
        &mut self,
        agent: &str,
        _parent: Option<&str>,
        source: &str,
    ) -> Result<(), PluginError> {
        self.policy()?;
        if !self.agents.contains_key(agent) {
            let state = AgentState::fork_of(self.agent(source)?);
            self.agents.insert(agent.to_string(), state);
        }
        self.refresh(agent)
    }

    pub fn agent_disposed(&mut self, agent: &str) {
        // The host drops the agent's restrictions with the agent.
        self.agents.remove(agent);
    }

    pub fn registry_changed(&mut self) -> Result<(), PluginError> {
        self.policy()?;
        self.load_registry();
        self.refresh_all();
        Ok(())
    }

    pub fn visible_tools(&mut self, agent: &str) -> Result<Vec<String>, PluginError> {
        self.ensure_fresh(agent)?;
        Ok(self.agent(agent)?.visible().to_vec())
    }

    /// Denies a direct call to a deferred tool that is not activated. It runs
    /// before every tool call, so it reads cached state, refreshed only when
    /// the host's tools generation says something changed.
    pub fn pre_execute(&mut self, agent: &str, tool: &str) -> Verdict {
        if let Err(e) = self.ensure_fresh(agent) {
            self.host.log(
                LogLevel::Debug,
                &format!("lazy-tools: pre-execute for `{agent}` on cached state: {e}"),
            );
        }
        match self.agents.get(agent) {
            Some(state) if state.is_lapsed(tool) => Verdict::Deny(guards::changed_hint(tool)),
            Some(state) if state.is_pending(tool) => Verdict::Deny(guards::deferred_hint(tool)),
            _ => Verdict::Pass,
        }
    }

    pub fn execute(
        &mut self,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<ToolResult, PluginError> {
        self.policy()?;
        self.agent(agent)?;
        match tool {
            guards::TOOL_SEARCH => self.tool_search(agent, arguments),
            guards::DEFER_EXECUTE_TOOL => self.defer_execute_tool(agent, arguments),
            other => Err(PluginError::UnknownTool(other.to_string())),
        }
    }

    /// Lifts every exposure layer this plugin installed.
    pub fn dispose(&mut self) {
        for (agent, state) in &mut self.agents {
            if state.installed().is_some() {
                if let Err(e) = self.host.expose(agent, None) {
                    self.host.log(
                        LogLevel::Warn,
                        &format!("lazy-tools: could not lift the exposure layer of `{agent}`: {e}"),
                    );
                }
                state.set_installed(None);
            }
        }
        self.agents.clear();
    }

    /// Text for the agent's system prompt: the catalog of deferred tools,
    /// the same for any registry or activation order.
    pub fn system_prompt(&mut self, agent: &str) -> Result<Option<String>, PluginError> {
        let config = self.policy()?.config();
        let (mode, chars, cap) = (
            config.catalog,
            config.catalog_description_chars as usize,
            config.catalog_tokens,
        );
        self.ensure_fresh(agent)?;
        if mode == CatalogMode::None {
            return Ok(None);
        }
        let state = self.agent(agent)?;
        if let Some(cache) = &state.catalog
            && cache.generation == state.seen_generation
            && cache.over_budget == state.budget.over
        {
            return Ok(cache.text.clone());
        }
        // Every tool the policy hides from this agent, loaded or not, so that
        // loading a tool never changes the text.
        let mut entries: Vec<Entry> = state
            .allowed_names()
            .filter(|name| self.decide(agent, name).hides(state.budget.over))
            .filter_map(|name| self.registry.lookup(name, agent))
            .map(|tool| Entry {
                name: tool.name.clone(),
                description: tool.description.clone(),
                group: self
                    .registry
                    .group_of(tool)
                    .map(|g| (g.name.clone(), g.description.clone())),
            })
            .collect();
        entries.sort();
        let host = &self.host;
        let text = catalog::render(mode, entries, chars, cap, |text| {
            host.count_tokens(&[text.to_string()])
                .and_then(|counts| counts.first().copied())
                .unwrap_or_else(|| estimate_tokens(text))
        });
        if let Some(state) = self.agents.get_mut(agent) {
            state.catalog = Some(CatalogCache {
                generation: state.seen_generation,
                over_budget: state.budget.over,
                text: text.clone(),
            });
        }
        Ok(text)
    }

    /// Why `tool` is visible, deferred or out of reach for `agent`.
    pub fn explain(&mut self, agent: &str, tool: &str) -> Result<Explanation, PluginError> {
        self.ensure_fresh(agent)?;
        let state = self.agent(agent)?;
        if !self.registry.contains(tool) && !state.is_allowed(tool) {
            return Ok(Explanation::unavailable(
                tool,
                Rule::UnknownTool,
                "no tool of that name is registered",
            ));
        }
        if !state.is_allowed(tool) {
            return Ok(Explanation::unavailable(
                tool,
                Rule::ParentRestriction,
                "a restriction of the agent's parent chain or of another plugin hides it",
            ));
        }
        let decision = self.decide(agent, tool);
        let mut explanation =
            Explanation::of(tool, &decision, state.is_activated(tool), state.budget);
        if state.is_lapsed(tool) {
            explanation.summary.push_str(
                "; it was loaded, but its definition has changed since, so it must be loaded again",
            );
        }
        Ok(explanation)
    }

    fn tool_search(&mut self, agent: &str, arguments: &str) -> Result<ToolResult, PluginError> {
        let args: SearchArgs = match parse_args(guards::TOOL_SEARCH, arguments) {
            Ok(args) => args,
            Err(result) => return Ok(result),
        };
        let top_k = args.top_k.unwrap_or(i64::from(DEFAULT_TOP_K));
        if !(1..=i64::from(MAX_TOP_K)).contains(&top_k) {
            return Ok(ToolResult::error(format!(
                "tool_search: top_k must be between 1 and {MAX_TOP_K}, got {top_k}"
            )));
        }
        if args.tool_names.is_empty() && args.queries.is_empty() {
            return Ok(ToolResult::error(
                "tool_search: give tool_names (exact names) or queries (what the tool should do)",
            ));
        }
        if let Some(problem) = query_problem(&args.queries) {
            return Ok(ToolResult::error(format!("tool_search: {problem}")));
        }
        if let Some(problem) = names_problem(&args.tool_names) {
            return Ok(ToolResult::error(format!("tool_search: {problem}")));
        }
        self.ensure_fresh(agent)?;
        let mut matches: Vec<Match> = Vec::new();
        let mut seen = HashSet::new();
        for name in &args.tool_names {
            let name = name.trim();
            if seen.insert(name.to_string()) {
                let (first, core) = self.activate_with_family(agent, name, &mut seen);
                matches.push(first);
                matches.extend(core);
            }
        }
        for query in &args.queries {
            let state = self.agent(agent)?;
            let hits: Vec<String> = self
                .index
                .search(query, top_k as usize, |name| {
                    state.is_pending(name) && !seen.contains(name)
                })
                .into_iter()
                .map(str::to_string)
                .collect();
            for name in hits {
                if seen.insert(name.clone()) {
                    let (first, core) = self.activate_with_family(agent, &name, &mut seen);
                    matches.push(first);
                    matches.extend(core);
                }
            }
        }
        self.install(agent)?;
        let output = SearchOutput {
            matches,
            remaining_deferred: self.agent(agent)?.pending_count(),
        };
        let text = output.text();
        Ok(ToolResult::ok(&output, text))
    }

    fn defer_execute_tool(
        &mut self,
        agent: &str,
        arguments: &str,
    ) -> Result<ToolResult, PluginError> {
        let args: ActivateArgs = match parse_args(guards::DEFER_EXECUTE_TOOL, arguments) {
            Ok(args) => args,
            Err(result) => return Ok(result),
        };
        if let Some(problem) = names_problem(std::slice::from_ref(&args.tool_name)) {
            return Ok(ToolResult::error(format!(
                "{}: {problem}",
                guards::DEFER_EXECUTE_TOOL
            )));
        }
        self.ensure_fresh(agent)?;
        let mut seen = HashSet::new();
        let (m, core) = self.activate_with_family(agent, args.tool_name.trim(), &mut seen);
        self.install(agent)?;
        let output = ActivateOutput {
            tool_name: m.name,
            status: m.status,
            reason: m.reason,
            also_loaded: core.into_iter().map(|m| m.name).collect(),
        };
        let text = output.text();
        Ok(ToolResult::ok(&output, text))
    }

    /// Activates `name` and, when it loads, the core tools of every family
    /// it belongs to: the match for `name`, and those of the core tools.
    fn activate_with_family(
        &mut self,
        agent: &str,
        name: &str,
        seen: &mut HashSet<String>,
    ) -> (Match, Vec<Match>) {
        let first = self.activate(agent, name);
        let mut matches = Vec::new();
        if first.status != Status::Loaded {
            return (first, matches);
        }
        let (Some(policy), Some(state)) = (&self.policy, self.agents.get(agent)) else {
            return (first, matches);
        };
        let mut core: Vec<(String, String)> = Vec::new();
        for family in policy.config().families.iter() {
            if family.members.first_match(name).is_none() {
                continue;
            }
            for pending in state.pending_names() {
                if family.core.first_match(pending).is_some() {
                    core.push((pending.to_string(), family.name.clone()));
                }
            }
        }
        core.sort();
        for (tool, family) in core {
            if seen.insert(tool.clone()) {
                let mut m = self.activate(agent, &tool);
                m.via = Some(format!("the core of family `{family}`"));
                matches.push(m);
            }
        }
        (first, matches)
    }

    /// Activates one tool for `agent` by exact name, never beyond what the
    /// agent may call. A hint names only tools the agent may call.
    fn activate(&mut self, agent: &str, name: &str) -> Match {
        let definition = self.registry.lookup(name, agent);
        let description = definition
            .map(|t| guards::first_sentence(&t.description, 200))
            .unwrap_or_default();
        let fingerprint = definition.map(ToolDef::fingerprint);
        let Some(state) = self.agents.get_mut(agent) else {
            return unavailable(name, "unknown agent".into());
        };
        let status = if let Some(fingerprint) = fingerprint
            && state.activate(name, fingerprint)
        {
            Status::Loaded
        } else if state.visible().iter().any(|v| v == name) {
            Status::AlreadyLoaded
        } else if self.registry.contains(name) {
            return unavailable(
                name,
                "this agent may not call it: a restriction of its chain or of another plugin hides it".into(),
            );
        } else {
            let reason = format!(
                "no tool of that name{}",
                suggest::did_you_mean(name, state.allowed_names())
            );
            return unavailable(name, reason);
        };
        Match {
            name: name.to_string(),
            description,
            status,
            reason: None,
            via: None,
        }
    }

    fn policy(&self) -> Result<&Policy, PluginError> {
        self.policy.as_ref().ok_or(PluginError::NotConfigured)
    }

    fn agent(&self, agent: &str) -> Result<&AgentState, PluginError> {
        self.agents
            .get(agent)
            .ok_or_else(|| PluginError::UnknownAgent(agent.to_string()))
    }

    fn load_registry(&mut self) {
        self.registry = Registry::new(self.host.registry(), self.host.tool_groups())
            .with_enrichment(self.host.tool_enrichment());
        self.index = SearchIndex::build(&self.registry);
        // Same policy: a name classified before keeps its decision.
        let known = std::mem::take(&mut self.classes);
        self.classify_all(known);
        self.count_costs();
    }

    /// Counts schema tokens when the config weighs them (auto mode); new
    /// schemas only, in one host call.
    fn count_costs(&mut self) {
        let auto = self
            .policy
            .as_ref()
            .is_some_and(|p| p.config().switch == DeferSwitch::Auto);
        if auto {
            self.costs.ensure(self.registry.tools(), &self.host);
        }
    }

    /// Classifies every registered name; decisions in `known`, made under the current
    /// policy, are taken as they are (a registry change mostly keeps its names).
    fn classify_all(&mut self, mut known: HashMap<String, Decision>) {
        let Some(policy) = &self.policy else { return };
        self.classes = self
            .registry
            .names()
            .map(|name| {
                known
                    .remove_entry(name)
                    .unwrap_or_else(|| (name.to_string(), policy.classify(name, false)))
            })
            .collect();
    }

    fn decide(&self, agent: &str, name: &str) -> Decision {
        let own = self.registry.is_own(name, agent);
        match (own, self.classes.get(name), &self.policy) {
            (false, Some(decision), _) => decision.clone(),
            (_, _, Some(policy)) => policy.classify(name, own),
            (_, _, None) => policy_missing(),
        }
    }

    fn refresh_all(&mut self) {
        let agents: Vec<String> = self.agents.keys().cloned().collect();
        for agent in agents {
            if let Err(e) = self.refresh(&agent) {
                self.host.log(
                    LogLevel::Warn,
                    &format!("lazy-tools: could not refresh `{agent}`: {e}"),
                );
            }
        }
    }

    /// Refreshes the agent's view unless nothing changed since the last
    /// refresh: per request this costs one host call, not the whole list of
    /// what the agent may call.
    fn ensure_fresh(&mut self, agent: &str) -> Result<(), PluginError> {
        if self.agent(agent)?.is_fresh(self.host.tools_generation()) {
            return Ok(());
        }
        self.refresh(agent)
    }

    /// Asks the host what the agent may call, reclassifies, and installs the
    /// resulting allow set if it changed.
    fn refresh(&mut self, agent: &str) -> Result<(), PluginError> {
        self.agent(agent)?;
        let allowed = self.host.allowed_tools(agent).map_err(PluginError::Host)?;
        let decisions: Vec<Decision> = allowed
            .iter()
            .map(|name| self.decide(agent, name))
            .collect();
        let budget = self.weigh_budget(agent, &allowed);
        let registry = &self.registry;
        let state = self
            .agents
            .get_mut(agent)
            .ok_or_else(|| PluginError::UnknownAgent(agent.into()))?;
        if let Some(standing) = budget {
            // Latched: once over, always over for this config.
            let over = state.budget.over || standing.over;
            state.budget = BudgetStanding { over, ..standing };
        }
        state.update(allowed, &decisions, |name| {
            registry.lookup(name, agent).map(ToolDef::fingerprint)
        });
        state.seen_generation = Some(self.host.tools_generation());
        self.install(agent)
    }

    /// In auto mode, what the agent's tools would cost if nothing were
    /// deferred (the guards aside), against the budget.
    fn weigh_budget(&self, agent: &str, allowed: &[String]) -> Option<BudgetStanding> {
        let config = self.policy.as_ref()?.config();
        if config.switch != DeferSwitch::Auto {
            return None;
        }
        let eager_tokens: u64 = allowed
            .iter()
            .filter(|name| !guards::is_guard(name))
            .filter_map(|name| self.registry.lookup(name, agent))
            .map(|tool| u64::from(self.costs.cost(tool)))
            .sum();
        Some(BudgetStanding {
            over: eager_tokens > u64::from(config.token_budget),
            eager_tokens,
            budget: config.token_budget,
        })
    }

    fn install(&mut self, agent: &str) -> Result<(), PluginError> {
        let state = self
            .agents
            .get_mut(agent)
            .ok_or_else(|| PluginError::UnknownAgent(agent.to_string()))?;
        let wanted = state.wanted_exposure();
        if wanted.as_deref() == state.installed() {
            return Ok(());
        }
        let was_fresh = state.is_fresh(self.host.tools_generation());
        self.host
            .expose(agent, wanted.as_deref())
            .map_err(PluginError::Host)?;
        state.set_installed(wanted);
        // Our own exposure layer never changes what `allowed-tools` says for
        // this agent (it leaves our layer out), nor for its descendants
        // (they do not inherit it).
        if was_fresh {
            state.seen_generation = Some(self.host.tools_generation());
        }
        Ok(())
    }
}

/// A guard tool's arguments; a bad shape is an error result the model
/// reads, not an error of the plugin.
fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: &str,
) -> Result<T, ToolResult> {
    serde_json::from_str(arguments)
        .map_err(|e| ToolResult::error(format!("{tool}: invalid arguments: {e}")))
}

/// A visible default for a state that cannot happen (a name classified
/// before any policy exists): never hide a tool by accident.
fn policy_missing() -> Decision {
    Decision {
        deferred: false,
        budgeted: false,
        reason: crate::policy::Reason::NoRule,
    }
}

/// What is wrong with the queries of a `tool_search` call, if anything.
fn query_problem(queries: &[String]) -> Option<String> {
    if queries.len() > MAX_QUERIES {
        return Some(format!(
            "at most {MAX_QUERIES} queries per call, got {}",
            queries.len()
        ));
    }
    queries.iter().enumerate().find_map(|(i, query)| {
        let chars = query.chars().count();
        if query.trim().is_empty() {
            Some(format!("query {} is empty", i + 1))
        } else if chars > MAX_QUERY_CHARS {
            Some(format!(
                "query {} has {chars} characters; at most {MAX_QUERY_CHARS}",
                i + 1
            ))
        } else {
            None
        }
    })
}

/// What is wrong with the tool names of a guard-tool call, if anything.
fn names_problem(names: &[String]) -> Option<String> {
    if names.len() > guards::MAX_TOOL_NAMES {
        return Some(format!(
            "at most {} tool names per call, got {}",
            guards::MAX_TOOL_NAMES,
            names.len()
        ));
    }
    names.iter().enumerate().find_map(|(i, name)| {
        let chars = name.chars().count();
        (chars > guards::MAX_TOOL_NAME_CHARS).then(|| {
            format!(
                "tool name {} has {chars} characters; at most {}",
                i + 1,
                guards::MAX_TOOL_NAME_CHARS
            )
        })
    })
}

fn unavailable(name: &str, reason: String) -> Match {
    Match {
        name: name.to_string(),
        description: String::new(),
        status: Status::Unavailable,
        reason: Some(reason),
        via: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queries(list: &[&str]) -> Vec<String> {
        list.iter().map(|q| q.to_string()).collect()
    }

    #[test]
    fn queries_within_the_limits_pass() {
        assert_eq!(query_problem(&queries(&["read a file", "读取文件"])), None);
        assert_eq!(query_problem(&[]), None);
        let longest = "字".repeat(MAX_QUERY_CHARS);
        assert_eq!(query_problem(&[longest]), None);
        assert_eq!(query_problem(&queries(&["q"; MAX_QUERIES])), None);
    }

    #[test]
    fn tool_names_are_bounded_like_queries() {
        let longest = "n".repeat(guards::MAX_TOOL_NAME_CHARS);
        assert_eq!(names_problem(&[longest]), None);
        // A 1 MB name cost 45 s of "did you mean" against every registered name.
        let huge = "n".repeat(1 << 20);
        assert_eq!(
            names_problem(&[String::new(), huge]).as_deref(),
            Some("tool name 2 has 1048576 characters; at most 256")
        );
        assert_eq!(
            names_problem(&queries(&["t"; guards::MAX_TOOL_NAMES + 1])).as_deref(),
            Some("at most 50 tool names per call, got 51")
        );
    }

    #[test]
    fn queries_past_the_limits_say_what_is_wrong() {
        assert_eq!(
            query_problem(&queries(&["ok", "  "])).as_deref(),
            Some("query 2 is empty")
        );
        let long = "字".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(
            query_problem(&[long]).as_deref(),
            Some("query 1 has 501 characters; at most 500")
        );
        assert_eq!(
            query_problem(&queries(&["q"; MAX_QUERIES + 1])).as_deref(),
            Some("at most 10 queries per call, got 11")
        );
    }
}
