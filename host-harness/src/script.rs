//! Scripted sessions: the tools, agents and steps of a session in YAML, each
//! step with what it must produce. The fixture tests under `tests/cases/`
//! and `host-harness session --steps` both run them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::catalog::Catalog;
use crate::plugin_api::ToolState;
use crate::shell::{CallOutcome, GroupLoader, LazyGroupDecl, Origin, Shell, Tool};
use crate::terminal::escape;

/// A session script.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// A catalog file, relative to the script, whose tools are registered
    /// first.
    #[serde(default)]
    pub catalog: Option<String>,
    /// Tools registered before the plugin starts.
    #[serde(default)]
    pub tools: Vec<Spanned<ToolEntry>>,
    /// Agents created before the plugin starts, parents first.
    #[serde(default)]
    pub agents: Vec<Spanned<AgentEntry>>,
    /// Groups the shell loads on demand (a scripted loader): their tools
    /// are registered when a plugin loads the group.
    #[serde(default)]
    pub lazy_groups: Vec<Spanned<LazyGroupSpec>>,
    #[serde(default)]
    pub steps: Vec<Spanned<Step>>,
}

/// A tool: a bare name is a built-in; `server` makes it an MCP tool and
/// `agent` puts it in that agent's own scope.
#[derive(Debug, Clone)]
pub enum ToolEntry {
    Name(String),
    Full(ToolSpec),
}

// By hand, not `untagged`: an untagged enum says only "data did not match any variant",
// where a misspelled key or a value of the wrong kind must be named, at its line.
impl<'de> Deserialize<'de> for ToolEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NameOrSpec::new(
            "a tool: its name, or a mapping with `name`",
            ToolEntry::Name,
            ToolEntry::Full,
        ))
    }
}

/// An entry written as a bare string or as a mapping of `S` (whose unknown keys are errors).
struct NameOrSpec<T, S> {
    expecting: &'static str,
    name: fn(String) -> T,
    spec: fn(S) -> T,
}

impl<T, S> NameOrSpec<T, S> {
    fn new(expecting: &'static str, name: fn(String) -> T, spec: fn(S) -> T) -> Self {
        Self {
            expecting,
            name,
            spec,
        }
    }
}

impl<'de, T, S: Deserialize<'de>> Visitor<'de> for NameOrSpec<T, S> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.name)(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Ok((self.name)(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        S::deserialize(de::value::MapAccessDeserializer::new(map)).map(self.spec)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default, deserialize_with = "crate::strict_json::optional_value")]
    pub parameters: Option<Value>,
}

impl ToolEntry {
    pub fn to_tool(&self) -> Result<Tool> {
        let spec = match self {
            ToolEntry::Name(name) => ToolSpec {
                name: name.clone(),
                description: None,
                server: None,
                agent: None,
                parameters: None,
            },
            ToolEntry::Full(spec) => spec.clone(),
        };
        let origin = match (spec.server, spec.agent) {
            (Some(_), Some(_)) => bail!("tool `{}`: give `server` or `agent`, not both", spec.name),
            (Some(server), None) => Origin::Mcp(server),
            (None, Some(agent)) => Origin::Agent(agent),
            (None, None) => Origin::Builtin,
        };
        let description = spec
            .description
            .unwrap_or_else(|| format!("The {} tool.", spec.name.replace('_', " ")));
        crate::shell_core::check_tool_name(&spec.name)?;
        let tool = Tool::new(spec.name, description, origin);
        Ok(match spec.parameters {
            Some(parameters) => tool.with_parameters(parameters),
            None => tool,
        })
    }
}

/// The tools of `entries`; a bad entry's error says its line.
fn tools_of(entries: &[Spanned<ToolEntry>]) -> Result<Vec<Tool>> {
    entries
        .iter()
        .map(|entry| {
            let at = &entry.referenced;
            entry
                .value
                .to_tool()
                .with_context(|| format!("the tool at line {}, column {}", at.line(), at.column()))
        })
        .collect()
}

/// A lazy group and what loading it does.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LazyGroupSpec {
    pub name: String,
    pub description: String,
    /// What loading it registers.
    #[serde(default)]
    pub tools: Vec<Spanned<ToolEntry>>,
    /// The tool names the shell declares before loading (default: the
    /// names of `tools`).
    #[serde(default)]
    pub declare: Option<Vec<String>>,
    /// Loading fails with this message (a server that does not start).
    #[serde(default)]
    pub fail: Option<String>,
}

/// The script's loader: each group's tools, or its failure.
#[derive(Debug)]
struct ScriptedLoader {
    groups: std::collections::BTreeMap<String, Result<Vec<Tool>, String>>,
}

impl GroupLoader for ScriptedLoader {
    fn load(&self, group: &str) -> Result<Vec<Tool>, String> {
        self.groups
            .get(group)
            .cloned()
            .unwrap_or_else(|| Err(format!("no group `{group}`")))
    }
}

/// An agent by its id (`main`, `main/worker`); `restrict` installs the
/// parent's restriction on it (source `parent`).
#[derive(Debug, Clone)]
pub enum AgentEntry {
    Id(String),
    Full(AgentSpec),
}

impl<'de> Deserialize<'de> for AgentEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NameOrSpec::new(
            "an agent: its id, or a mapping with `id`",
            AgentEntry::Id,
            AgentEntry::Full,
        ))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub id: String,
    #[serde(default)]
    pub restrict: Option<Vec<String>>,
}

impl AgentEntry {
    fn spec(&self) -> AgentSpec {
        match self {
            AgentEntry::Id(id) => AgentSpec {
                id: id.clone(),
                restrict: None,
            },
            AgentEntry::Full(spec) => spec.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// What the model sees on the agent's next request.
    Visible(VisibleStep),
    /// A tool call, as the model would make it.
    Call(CallStep),
    /// Tools registered now (an MCP server that connects late).
    Register(Vec<ToolEntry>),
    /// Tools removed from the global scope.
    Unregister(Vec<String>),
    CreateAgent(AgentSpec),
    /// An agent created as a fork of `source`: it starts with what `source`
    /// loaded.
    ForkAgent(ForkStep),
    DisposeAgent(String),
    /// A restriction layer from another source.
    Restrict(RestrictStep),
    /// The plugin gets a new config; `error` is the expected rejection.
    Reconfigure(ReconfigureStep),
    /// A lifecycle event sent again, straight to the plugin.
    Resend(Resend),
    /// The plugin is removed.
    DisposePlugin,
    /// What the plugin's `explain` says of a tool for an agent.
    Explain(ExplainStep),
    /// A new run: the plugin's load state is saved, the plugin started
    /// afresh (with `config`, or the one it has) and the state restored.
    Resume(ResumeStep),
    /// How many times the shell loaded a lazy group.
    LazyLoads(LazyLoadsStep),
    /// The agent's request (tools array and system prompt) stays byte for
    /// byte the same before and after each of `during`.
    Steady(SteadyStep),
    /// What the agent's system prompt holds.
    Prompt(PromptStep),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeStep {
    #[serde(default, deserialize_with = "crate::strict_json::optional_value")]
    pub config: Option<Value>,
    /// The expected error, when the restore must be refused.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LazyLoadsStep {
    pub group: String,
    pub times: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyStep {
    pub agent: String,
    pub during: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptStep {
    pub agent: String,
    #[serde(default)]
    pub contains: Vec<String>,
    #[serde(default)]
    pub excludes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainStep {
    pub agent: String,
    pub tool: String,
    /// `visible`, `deferred` or `unavailable`.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub summary_contains: Vec<String>,
    /// The JSON pointer of the config entry that decided (`none`: none did).
    #[serde(default)]
    pub pointer: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisibleStep {
    pub agent: String,
    /// The whole list, in prompt order.
    #[serde(default)]
    pub exactly: Option<Vec<String>>,
    #[serde(default)]
    pub includes: Vec<String>,
    #[serde(default)]
    pub excludes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallStep {
    pub agent: String,
    pub tool: String,
    #[serde(default, deserialize_with = "crate::strict_json::optional_value")]
    pub args: Option<Value>,
    pub expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub outcome: OutcomeKind,
    /// Which hook denied it.
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub reason_contains: Vec<String>,
    #[serde(default)]
    pub text_contains: Vec<String>,
    /// A subset of the result's JSON: every key given must match; lists
    /// must match element by element and in length.
    #[serde(default, deserialize_with = "crate::strict_json::optional_value")]
    pub json: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Refused by a pre-execute hook.
    Denied,
    /// Refused by the shell (unknown or restricted tool).
    Refused,
    /// Ran and succeeded.
    Ok,
    /// Ran and returned an error result.
    Error,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkStep {
    /// The new agent's id (`main/fork`).
    pub id: String,
    /// The agent it forks.
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestrictStep {
    pub agent: String,
    pub source: String,
    pub allow: Option<Vec<String>>,
    /// The expected rejection, if the shell must refuse the restriction.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconfigureStep {
    #[serde(deserialize_with = "crate::strict_json::value")]
    pub config: Value,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Resend {
    AgentCreated(String),
    AgentDisposed(String),
    RegistryChanged,
}

impl Script {
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::yaml::read_bounded(path)
            .with_context(|| format!("reading {}", path.display()))?;
        Self::parse(path, &text)
    }

    /// Parsed as profiles are (`yaml::options`: YAML 1.2 booleans).
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        serde_saphyr::from_str_with_options(text, crate::yaml::options()).map_err(|e| {
            let place = e
                .location()
                .map(|l| format!("{}:{}:{}", path.display(), l.line(), l.column()))
                .unwrap_or_else(|| path.display().to_string());
            anyhow!("{place}: {}", crate::yaml::first_line(&e.to_string()))
        })
    }

    /// Registers the script's catalog and tools and creates its agents.
    /// Whether the script declares its own tools or agents (a fixture case
    /// does), rather than running on a world set up for it.
    pub fn declares_world(&self) -> bool {
        !self.tools.is_empty() || !self.agents.is_empty() || !self.lazy_groups.is_empty()
    }

    pub fn set_up(&self, shell: &mut Shell, base: &Path) -> Result<()> {
        if let Some(catalog) = &self.catalog {
            shell.register_catalog(&Catalog::load(&base.join(catalog))?)?;
        }
        // Agent-scoped tools need their agent first.
        let tools = tools_of(&self.tools)?;
        // Named twice, a tool is an error of the file, at its place (the registry would say
        // only that the name is taken).
        let mut first: HashMap<(&str, Option<&str>), &Spanned<ToolEntry>> = HashMap::new();
        for (tool, entry) in tools.iter().zip(&self.tools) {
            if let Some(before) = first.insert((&tool.name, tool.origin.scope()), entry) {
                let (at, was) = (&entry.referenced, &before.referenced);
                bail!(
                    "the tool at line {}, column {}: `{}` is listed twice in its scope (first at \
                     line {}, column {})",
                    at.line(),
                    at.column(),
                    escape(&tool.name),
                    was.line(),
                    was.column()
                );
            }
        }
        let (scoped, global): (Vec<_>, Vec<_>) =
            tools.into_iter().partition(|t| t.origin.scope().is_some());
        shell.register_tools(global)?;
        for agent in &self.agents {
            let at = &agent.referenced;
            create_agent(shell, &agent.value.spec()).with_context(|| {
                format!("the agent at line {}, column {}", at.line(), at.column())
            })?;
        }
        shell.register_tools(scoped)?;
        if !self.lazy_groups.is_empty() {
            let mut decls = Vec::new();
            let mut groups = std::collections::BTreeMap::new();
            let mut first: HashMap<&str, &Spanned<LazyGroupSpec>> = HashMap::new();
            for spanned in &self.lazy_groups {
                let spec = &spanned.value;
                if let Some(before) = first.insert(&spec.name, spanned) {
                    let (at, was) = (&spanned.referenced, &before.referenced);
                    bail!(
                        "the lazy group at line {}, column {}: `{}` is declared twice (first at \
                         line {}, column {})",
                        at.line(),
                        at.column(),
                        escape(&spec.name),
                        was.line(),
                        was.column()
                    );
                }
                let tools = tools_of(&spec.tools)?;
                decls.push(LazyGroupDecl {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    tool_names: spec
                        .declare
                        .clone()
                        .unwrap_or_else(|| tools.iter().map(|t| t.name.clone()).collect()),
                });
                let outcome = match &spec.fail {
                    Some(message) => Err(message.clone()),
                    None => Ok(tools),
                };
                groups.insert(spec.name.clone(), outcome);
            }
            shell.set_lazy_groups(decls, std::sync::Arc::new(ScriptedLoader { groups }))?;
        }
        Ok(())
    }
}

fn create_agent(shell: &mut Shell, spec: &AgentSpec) -> Result<()> {
    let (parent, name) = match spec.id.rsplit_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, spec.id.as_str()),
    };
    shell.create_agent(name, parent)?;
    if let Some(allow) = &spec.restrict {
        shell.restrict(&spec.id, "parent", Some(allow.clone()))?;
    }
    Ok(())
}

/// Runs one step and checks what it must produce. Returns a line for the
/// transcript; `Err` says what differed.
pub fn run_step(shell: &mut Shell, plugin: &str, step: &Step) -> Result<String> {
    match step {
        Step::Visible(v) => {
            let names: Vec<String> = shell
                .next_request(&v.agent)?
                .into_iter()
                .map(|t| t.name)
                .collect();
            if let Some(exactly) = &v.exactly
                && &names != exactly
            {
                bail!("{} sees {names:?}, expected exactly {exactly:?}", v.agent);
            }
            for name in &v.includes {
                if !names.contains(name) {
                    bail!("{} does not see `{name}`; it sees {names:?}", v.agent);
                }
            }
            for name in &v.excludes {
                if names.contains(name) {
                    bail!("{} sees `{name}`, which must be hidden", v.agent);
                }
            }
            Ok(format!("{} sees {}", v.agent, names.join(", ")))
        }
        Step::Call(c) => {
            let args = c.args.clone().unwrap_or_else(|| serde_json::json!({}));
            let outcome = shell.call(&c.agent, &c.tool, &args)?;
            check_outcome(&outcome, &c.expect).with_context(|| {
                format!("{} calling `{}`: {}", c.agent, c.tool, describe(&outcome))
            })?;
            Ok(format!(
                "{} calls {}: {}",
                c.agent,
                c.tool,
                describe(&outcome)
            ))
        }
        Step::Register(entries) => {
            let tools = entries
                .iter()
                .map(ToolEntry::to_tool)
                .collect::<Result<Vec<_>>>()?;
            let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            shell.register_tools(tools)?;
            Ok(format!("registered {}", names.join(", ")))
        }
        Step::Unregister(names) => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            shell.unregister_tools(&names, None)?;
            Ok(format!("unregistered {}", names.join(", ")))
        }
        Step::CreateAgent(spec) => {
            create_agent(shell, spec)?;
            Ok(format!("created {}", spec.id))
        }
        Step::ForkAgent(fork) => {
            let (parent, name) = match fork.id.rsplit_once('/') {
                Some((parent, name)) => (Some(parent), name),
                None => (None, fork.id.as_str()),
            };
            shell.fork_agent(name, parent, &fork.source)?;
            Ok(format!("forked {} from {}", fork.id, fork.source))
        }
        Step::DisposeAgent(id) => {
            shell.dispose_agent(id)?;
            Ok(format!("disposed {id}"))
        }
        Step::Restrict(r) => {
            let result = shell.restrict(&r.agent, &r.source, r.allow.clone());
            expect_error(result, r.error.as_deref())?;
            Ok(format!("{} restricts {}", r.source, r.agent))
        }
        Step::Reconfigure(r) => {
            let result = shell
                .reconfigure(plugin, &r.config)
                .map_err(anyhow::Error::from);
            expect_error(result, r.error.as_deref())?;
            Ok("reconfigured".into())
        }
        Step::Resend(event) => {
            let instance = shell.plugin_mut(plugin)?;
            match event {
                Resend::AgentCreated(agent) => {
                    let parent = agent.rsplit_once('/').map(|(p, _)| p);
                    instance
                        .agent_created(agent, parent)?
                        .map_err(|e| anyhow!("{e}"))?;
                }
                Resend::AgentDisposed(agent) => instance.agent_disposed(agent)?,
                Resend::RegistryChanged => {
                    instance.registry_changed()?.map_err(|e| anyhow!("{e}"))?
                }
            }
            Ok(format!("resent {event:?}"))
        }
        Step::Explain(e) => {
            let located = shell.explain_located(plugin, &e.agent, &e.tool)?;
            let summary = &located.explanation.summary;
            if let Some(state) = &e.state {
                let actual = match located.explanation.state {
                    ToolState::Visible => "visible",
                    ToolState::Deferred => "deferred",
                    ToolState::Unavailable => "unavailable",
                };
                if actual != state {
                    bail!("explain says {actual}, expected {state}: {summary}");
                }
            }
            for needle in &e.summary_contains {
                if !summary.contains(needle.as_str()) {
                    bail!("the explanation does not contain `{needle}`: {summary}");
                }
            }
            if let Some(pointer) = &e.pointer {
                let actual = located.pointer.as_deref().unwrap_or("none");
                if actual != pointer {
                    bail!("the deciding entry is at `{actual}`, expected `{pointer}`: {summary}");
                }
            }
            Ok(summary.clone())
        }
        Step::DisposePlugin => {
            shell.dispose_plugin(plugin)?;
            Ok(format!("disposed plugin {plugin}"))
        }
        Step::Resume(r) => {
            let result = shell.resume_plugin(plugin, r.config.as_ref());
            expect_error(result, r.error.as_deref())?;
            Ok("resumed".into())
        }
        Step::LazyLoads(l) => {
            let times = shell
                .core()
                .lazy_group_loads(&l.group)
                .ok_or_else(|| anyhow!("no lazy group `{}`", l.group))?;
            if times != l.times {
                bail!(
                    "group `{}` was loaded {times} times, expected {}",
                    l.group,
                    l.times
                );
            }
            Ok(format!("group {} loaded {times} times", l.group))
        }
        Step::Steady(steady) => {
            let first = request_bytes(shell, &steady.agent)?;
            for (index, step) in steady.during.iter().enumerate() {
                run_step(shell, plugin, step)
                    .with_context(|| format!("steady step {}", index + 1))?;
                let now = request_bytes(shell, &steady.agent)?;
                if now != first {
                    bail!(
                        "after steady step {}, {}'s request changed:\nbefore: {first}\nafter:  {now}",
                        index + 1,
                        steady.agent
                    );
                }
            }
            Ok(format!(
                "{}'s request stayed the same over {} steps",
                steady.agent,
                steady.during.len()
            ))
        }
        Step::Prompt(p) => {
            let prompt = shell.assemble(&p.agent)?.system_prompt.unwrap_or_default();
            for needle in &p.contains {
                if !prompt.contains(needle.as_str()) {
                    bail!("the system prompt does not contain `{needle}`: {prompt}");
                }
            }
            for needle in &p.excludes {
                if prompt.contains(needle.as_str()) {
                    bail!("the system prompt contains `{needle}`: {prompt}");
                }
            }
            Ok(prompt)
        }
    }
}

/// The agent's next request as the provider would receive it: the tools
/// array as JSON, then the system prompt.
pub fn request_bytes(shell: &mut Shell, agent: &str) -> Result<String> {
    let request = shell.assemble(agent)?;
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
            })
        })
        .collect();
    Ok(format!(
        "{}\n{}",
        Value::Array(tools),
        request.system_prompt.unwrap_or_default()
    ))
}

fn expect_error(result: Result<()>, expected: Option<&str>) -> Result<()> {
    match (result, expected) {
        (Ok(()), None) => Ok(()),
        (Ok(()), Some(expected)) => bail!("expected the error `{expected}`, but it succeeded"),
        (Err(e), None) => Err(e),
        (Err(e), Some(expected)) => {
            let message = format!("{e:#}");
            if message.contains(expected) {
                Ok(())
            } else {
                bail!("expected an error containing `{expected}`, got `{message}`")
            }
        }
    }
}

fn check_outcome(outcome: &CallOutcome, expect: &Expect) -> Result<()> {
    let (kind, reason, text, json) = match outcome {
        CallOutcome::Denied { reason, .. } => (OutcomeKind::Denied, Some(reason), None, None),
        CallOutcome::Refused(reason) => (OutcomeKind::Refused, Some(reason), None, None),
        CallOutcome::Completed(out) => (
            if out.is_error {
                OutcomeKind::Error
            } else {
                OutcomeKind::Ok
            },
            None,
            Some(&out.text),
            Some(&out.json),
        ),
    };
    if kind != expect.outcome {
        bail!("expected {:?}, got {kind:?}", expect.outcome);
    }
    if let (Some(by), CallOutcome::Denied { by: actual, .. }) = (&expect.by, outcome)
        && by != actual
    {
        bail!("expected a deny by `{by}`, got one by `{actual}`");
    }
    for needle in &expect.reason_contains {
        if !reason.is_some_and(|r| r.contains(needle.as_str())) {
            bail!("the reason does not contain `{needle}`");
        }
    }
    for needle in &expect.text_contains {
        if !text.is_some_and(|t| t.contains(needle.as_str())) {
            bail!("the text does not contain `{needle}`");
        }
    }
    if let Some(expected) = &expect.json {
        let actual = json.ok_or_else(|| anyhow!("no JSON result to compare"))?;
        if let Err(path) = json_subset(expected, actual, String::new()) {
            bail!("the JSON result differs at `{path}`: {actual}");
        }
    }
    Ok(())
}

/// Whether `expected` is a subset of `actual`; `Err` holds where it is not.
fn json_subset(expected: &Value, actual: &Value, path: String) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let at = format!("{path}/{key}");
                match a.get(key) {
                    Some(actual) => json_subset(value, actual, at)?,
                    None => return Err(at),
                }
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{path} (length {} != {})", a.len(), e.len()));
            }
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                json_subset(e, a, format!("{path}/{i}"))?;
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(path),
    }
}

/// One line a person reads.
pub fn describe(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Denied { by, reason } => format!("denied by {by}: {reason}"),
        CallOutcome::Refused(reason) => format!("refused: {reason}"),
        CallOutcome::Completed(out) => {
            let mut line = String::new();
            if out.is_error {
                line.push_str("error: ");
            }
            let _ = write!(line, "{}", out.text.replace('\n', " | "));
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_subset_checks_keys_and_lengths() {
        let actual = json!({"a": 1, "b": [{"x": 1, "y": 2}], "c": "z"});
        assert!(json_subset(&json!({"a": 1}), &actual, String::new()).is_ok());
        assert!(json_subset(&json!({"b": [{"x": 1}]}), &actual, String::new()).is_ok());
        assert_eq!(
            json_subset(&json!({"b": []}), &actual, String::new()),
            Err("/b (length 1 != 0)".into())
        );
        assert_eq!(
            json_subset(&json!({"b": [{"x": 2}]}), &actual, String::new()),
            Err("/b/0/x".into())
        );
        assert_eq!(
            json_subset(&json!({"d": 1}), &actual, String::new()),
            Err("/d".into())
        );
    }

    #[test]
    fn scripts_parse_with_located_errors() {
        let script = Script::parse(
            Path::new("s.yml"),
            "tools: [bash, {name: x, server: s}]\nagents: [main]\nsteps:\n  - visible: {agent: main, includes: [bash]}\n  - dispose_plugin\n",
        )
        .unwrap();
        assert_eq!(script.steps.len(), 2);
        assert_eq!(script.steps[1].referenced.line(), 5);
        let err =
            Script::parse(Path::new("s.yml"), "steps:\n  - visibel: {agent: main}\n").unwrap_err();
        assert!(err.to_string().starts_with("s.yml:2:"), "{err}");
    }

    /// A step's arguments, config or expected JSON reach the tool, plugin or comparison as
    /// written, or the file is refused at the place: an integer past 64 bits was read rounded
    /// and a repeated key overwrote the first, silently.
    #[test]
    fn a_steps_json_value_is_read_as_written_or_refused_at_its_place() {
        let call = |args: &str| {
            format!(
                "steps:\n  - call:\n      agent: main\n      tool: echo\n      args: {args}\n      expect: {{outcome: ok}}\n"
            )
        };
        let err = Script::parse(
            Path::new("s.yml"),
            &call("{n: 123456789012345678901234567890}"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("s.yml:5:"), "{err}");
        assert!(err.contains("is past the 64-bit integers"), "{err}");
        let err = Script::parse(Path::new("s.yml"), &call("{path: x, path: y}"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("s.yml:5:"), "{err}");
        assert!(err.contains("duplicate"), "{err}");
        let err = Script::parse(
            Path::new("s.yml"),
            "steps:\n  - reconfigure:\n      config: {catalogTokens: -99999999999999999999}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("s.yml:3:"), "{err}");
        let script = Script::parse(Path::new("s.yml"), &call("{n: 18446744073709551615}")).unwrap();
        let Step::Call(step) = &script.steps[0].value else {
            panic!("a call step")
        };
        assert_eq!(step.args, Some(json!({"n": u64::MAX})));
    }

    #[test]
    fn a_tool_entry_whose_name_the_model_could_not_call_is_an_error_at_its_line() {
        let script = Script::parse(
            Path::new("s.yml"),
            "tools:\n  - bash\n  - {name: \"get forecast\", server: w}\n",
        )
        .unwrap();
        let mut shell = Shell::new();
        let err = script.set_up(&mut shell, Path::new(".")).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "the tool at line 3, column 5: invalid tool name `get forecast`: a tool's name is 1 \
             to 256 characters without whitespace, control characters, bidirectional controls or invisible characters"
        );
        assert!(shell.core().tools().is_empty(), "nothing is registered");
    }

    #[test]
    fn a_tool_or_lazy_group_named_twice_is_an_error_at_its_line() {
        let set_up = |text: &str| {
            let script = Script::parse(Path::new("s.yml"), text).unwrap();
            let mut shell = Shell::new();
            let err = script.set_up(&mut shell, Path::new(".")).unwrap_err();
            (format!("{err:#}"), shell.core().tools().is_empty())
        };
        assert_eq!(
            set_up("tools:\n  - bash\n  - read\n  - bash\n"),
            (
                "the tool at line 4, column 5: `bash` is listed twice in its scope (first at \
                 line 2, column 5)"
                    .to_string(),
                true
            )
        );
        let (err, _) = set_up(
            "lazy_groups:\n  - {name: db, description: a}\n  - {name: db, description: b}\n",
        );
        assert_eq!(
            err,
            "the lazy group at line 3, column 5: `db` is declared twice (first at line 2, \
             column 5)"
        );
    }

    #[test]
    fn a_scripts_yaml_errors_say_what_is_wrong_for_a_person() {
        let error = |text: &str| {
            Script::parse(Path::new("s.yml"), text)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error("steps: []\n---\nsteps: []\n"),
            "s.yml:3:1: the file holds several YAML documents; a file here holds one"
        );
        assert_eq!(
            error("steps:\n  - visible: {agent: main, agent: x}\n"),
            "s.yml:2:28: duplicate mapping key: agent"
        );
        let deep = format!(
            "steps:\n  - call: {{agent: main, tool: read, args: {}1{}}}\n",
            "{a: ".repeat(200),
            "}".repeat(200)
        );
        assert!(
            error(&deep).ends_with(": the document is nested deeper than a file here may be"),
            "{}",
            error(&deep)
        );
    }

    /// As in profiles: `no`, `on` and `y` are strings, so they reach a tool as written.
    #[test]
    fn only_yaml_1_2_booleans_are_booleans() {
        let script = Script::parse(
            Path::new("s.yml"),
            "tools: [y, no]\nsteps:\n  - call: {agent: main, tool: read, args: {path: no, all: true}, expect: {outcome: ok}}\n",
        )
        .unwrap();
        let names: Vec<String> = tools_of(&script.tools)
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["y", "no"]);
        let Step::Call(call) = &script.steps[0].value else {
            panic!("{:?}", script.steps[0].value);
        };
        assert_eq!(call.args, Some(json!({"path": "no", "all": true})));
    }

    /// A misspelled key or a value of the wrong kind in a tool or agent entry is named, at
    /// its line (an untagged enum said only "data did not match any variant").
    #[test]
    fn a_wrong_tool_or_agent_entry_is_named_at_its_line() {
        let error = |text: &str| {
            Script::parse(Path::new("s.yml"), text)
                .unwrap_err()
                .to_string()
        };
        let err = error("tools:\n  - bash\n  - {name: x, descripton: d}\n");
        assert!(err.starts_with("s.yml:3:"), "{err}");
        assert!(err.contains("unknown field `descripton`"), "{err}");
        let err = error("agents:\n  - main\n  - {id: main/w, restrct: [read]}\n");
        assert!(err.starts_with("s.yml:3:"), "{err}");
        assert!(err.contains("unknown field `restrct`"), "{err}");
        let err = error("tools:\n  - bash\n  - [x]\n");
        assert!(err.starts_with("s.yml:3:"), "{err}");
        assert!(
            err.contains("expected a tool: its name, or a mapping with `name`"),
            "{err}"
        );
        let err = error("steps:\n  - register: [{nme: x}]\n");
        assert!(err.starts_with("s.yml:2:"), "{err}");
        assert!(err.contains("unknown field `nme`"), "{err}");
        assert!(!err.contains("did not match any variant"), "{err}");
    }

    /// An agent the shell refuses is an error at its line.
    #[test]
    fn an_agent_entry_the_shell_refuses_is_an_error_at_its_line() {
        let deep = format!("main{}", "/a".repeat(64));
        let script = Script::parse(
            Path::new("s.yml"),
            &format!("agents:\n  - main\n  - main/a b\n  - {deep}\n"),
        )
        .unwrap();
        let mut shell = Shell::new();
        let err = script.set_up(&mut shell, Path::new(".")).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "the agent at line 3, column 5: invalid agent name `main/a b`: use letters, digits, \
             `-` and `_`"
        );
        let script = Script::parse(
            Path::new("s.yml"),
            &format!("agents:\n  - main\n  - {{id: {deep}}}\n"),
        )
        .unwrap();
        let err = script
            .set_up(&mut Shell::new(), Path::new("."))
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.starts_with("the agent at line 3, column 5: agent `main/a/a"),
            "{err}"
        );
        assert!(err.ends_with("is 65 agents deep; a chain holds at most 64 (`main` is 1)"));
    }
}
