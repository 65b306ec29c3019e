//! What each guard tool does, over the plugin's state through [`Loads`]:
//! `tool_search`, `defer_execute_tool`, `load_tools`, and the resolution of
//! a `deferred_tool_call` the shell asks for before anything else.

use std::borrow::Cow;
use std::collections::HashSet;

use super::arguments::{
    ActivateArgs, ForwardArgs, LoadArgs, MAX_ARGUMENT_BYTES, SearchArgs, names_problem, parse_args,
    query_problem,
};
use super::results::{
    ActivateOutput, LoadOutput, MAX_LISTED_MATCH_BYTES, MAX_LISTED_NAME_BYTES,
    MAX_LOAD_SCHEMA_BYTES, MAX_SEARCH_SCHEMA_BYTES, SearchOutput, Unavailable, changed_hint,
    group_unavailable, listed, listed_matches, within_budget,
};
use super::{
    DEFAULT_TOP_K, DEFER_EXECUTE_TOOL, DEFERRED_TOOL_CALL, LOAD_TOOLS, MAX_FORWARD_BYTES,
    MAX_TOOL_NAME_CHARS, MAX_TOP_K, Match, Status, TOOL_SEARCH, ToolTexts, is_guard,
};
use crate::config::Strategy;
use crate::outcome::{PluginError, Resolution, ToolResult};
use crate::shown::tool_name;
use crate::suggest::Hints;

/// A group as `load_tools` finds it for one agent.
pub enum GroupLookup {
    /// Its members this agent may load (deferred for it), sorted.
    Members(Vec<String>),
    /// No such group: the reason, with a "did you mean".
    Unknown(String),
    /// A lazy group the host could not load: why.
    Failed(String),
}

/// Where a forwarded call's tool stands for one agent.
pub enum Target {
    /// Callable as it is (loaded, visible, or refused by the shell's own
    /// checks like any call would be).
    Ready,
    /// Deferred and not loaded: resolving the call loads it.
    Pending,
    /// Loaded, but its definition changed since: the model wrote its arguments for a schema
    /// that is no longer the tool's, so the call is refused as a direct call would be.
    Changed,
    /// No tool of that name: the reason, with a "did you mean".
    Unknown(String),
}

/// What the guard handlers need of the plugin's state.
pub trait Loads {
    fn strategy(&self) -> Strategy;
    /// The "did you mean" hints this call may still look up.
    fn hints(&mut self) -> &mut Hints;
    /// Brings the agent's view up to date with the host.
    fn refresh(&mut self, agent: &str) -> Result<(), PluginError>;
    /// The registered name the model means by `name`: `name` itself when a tool has it, else
    /// the one tool whose name shows as `name` in the plugin's lines (one line, trimmed), when
    /// the agent may call it.
    fn tool_named<'a>(&self, agent: &str, name: &'a str) -> Cow<'a, str>;
    /// Loads one tool by exact name, never beyond what the agent may call.
    fn activate(&mut self, agent: &str, name: &str) -> Result<Match, PluginError>;
    /// The core tools (and their family) that loading `name` brings along.
    /// Families in `expanded` are skipped, and those looked up now are added: a call looks a
    /// family's core up once (each lookup reads every tool the agent has pending).
    fn family_core(
        &self,
        agent: &str,
        name: &str,
        expanded: &mut HashSet<String>,
    ) -> Vec<(String, String)>;
    /// Deferred, not loaded tools matching `query`, best first.
    fn search(&self, agent: &str, query: &str, top_k: usize, skip: &HashSet<String>)
    -> Vec<String>;
    /// Installs the agent's exposure layer if it changed.
    fn install(&mut self, agent: &str) -> Result<(), PluginError>;
    fn pending_count(&self, agent: &str) -> usize;
    /// Whether the agent has `name` loaded (or visible without loading).
    fn is_loaded(&self, agent: &str, name: &str) -> bool;
    /// The texts of the definition the agent sees under `name`.
    fn tool_texts(&self, agent: &str, name: &str) -> Option<ToolTexts<'_>>;
    /// Group `id` for the agent, loading it from the host first when it is
    /// a lazy group not loaded this run.
    fn group(&mut self, agent: &str, id: &str) -> Result<GroupLookup, PluginError>;
    /// Where a forwarded call's tool stands, loading its lazy group first
    /// when only a lazy group declares it. `Err(Ok(reason))`: the group
    /// failed to load.
    fn target(&mut self, agent: &str, name: &str) -> Result<Result<Target, String>, PluginError>;
}

pub fn tool_search(
    loads: &mut impl Loads,
    agent: &str,
    arguments: &str,
) -> Result<ToolResult, PluginError> {
    let args: SearchArgs = match parse_args(TOOL_SEARCH, arguments, MAX_ARGUMENT_BYTES) {
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
    loads.refresh(agent)?;
    // What was asked for (by name or by query) comes first, then the families' cores it
    // brought along: a result that cannot list them all lists what the model asked for.
    let mut matches: Vec<Match> = Vec::new();
    let mut cores: Vec<Match> = Vec::new();
    let mut seen = HashSet::new();
    let mut families = HashSet::new();
    let asked: Vec<String> = (args.tool_names.iter())
        .map(|name| loads.tool_named(agent, name.trim()).into_owned())
        .collect();
    // A core tool asked for by name is listed as asked for, not as another's core.
    let mut family = Family {
        seen: &mut seen,
        expanded: &mut families,
        asked: &asked.iter().map(String::as_str).collect(),
    };
    for name in &asked {
        if family.seen.insert(name.clone()) {
            let (first, core) = activate_with_family(loads, agent, name, &mut family)?;
            matches.push(first);
            cores.extend(core);
        }
    }
    for query in &args.queries {
        for name in loads.search(agent, query, top_k as usize, family.seen) {
            if family.seen.insert(name.clone()) {
                let (first, core) = activate_with_family(loads, agent, &name, &mut family)?;
                matches.push(first);
                cores.extend(core);
            }
        }
    }
    matches.extend(cores);
    loads.install(agent)?;
    let (schemas, schemas_left_out) = if loads.strategy() == Strategy::Dispatch {
        let tools = (matches.iter())
            .filter(|m| m.status != Status::Unavailable)
            .filter_map(|m| loads.tool_texts(agent, &m.name));
        let (kept, left_out) = within_budget(tools, MAX_SEARCH_SCHEMA_BYTES);
        (Some(kept), left_out)
    } else {
        (None, Vec::new())
    };
    for m in &mut matches {
        m.name = tool_name(std::mem::take(&mut m.name));
        m.via = m.via.take().map(tool_name);
    }
    let (matches, matches_unlisted) = listed_matches(matches, MAX_LISTED_MATCH_BYTES);
    let mut room = MAX_LISTED_NAME_BYTES;
    let schemas_left_out = schemas_left_out.into_iter().map(tool_name).collect();
    let (schemas_left_out, schemas_left_out_unlisted) = listed(schemas_left_out, &mut room);
    let output = SearchOutput {
        matches,
        matches_unlisted,
        remaining_deferred: loads.pending_count(agent),
        schemas,
        schemas_left_out,
        schemas_left_out_unlisted,
    };
    let text = output.text();
    Ok(ToolResult::ok(&output, text))
}

pub fn defer_execute_tool(
    loads: &mut impl Loads,
    agent: &str,
    arguments: &str,
) -> Result<ToolResult, PluginError> {
    let args: ActivateArgs = match parse_args(DEFER_EXECUTE_TOOL, arguments, MAX_ARGUMENT_BYTES) {
        Ok(args) => args,
        Err(result) => return Ok(result),
    };
    if let Some(problem) = names_problem(std::slice::from_ref(&args.tool_name)) {
        return Ok(ToolResult::error(format!(
            "{DEFER_EXECUTE_TOOL}: {problem}"
        )));
    }
    loads.refresh(agent)?;
    let (mut seen, mut expanded) = (HashSet::new(), HashSet::new());
    let name = loads.tool_named(agent, args.tool_name.trim()).into_owned();
    let mut family = Family {
        seen: &mut seen,
        expanded: &mut expanded,
        asked: &HashSet::new(),
    };
    let (m, core) = activate_with_family(loads, agent, &name, &mut family)?;
    loads.install(agent)?;
    let core = core.into_iter().map(|m| tool_name(m.name)).collect();
    let mut room = MAX_LISTED_NAME_BYTES;
    let (also_loaded, also_loaded_unlisted) = listed(core, &mut room);
    let output = ActivateOutput {
        tool_name: tool_name(m.name),
        status: m.status,
        reason: m.reason,
        also_loaded,
        also_loaded_unlisted,
    };
    let text = output.text();
    Ok(ToolResult::ok(&output, text))
}

pub fn load_tools(
    loads: &mut impl Loads,
    agent: &str,
    arguments: &str,
) -> Result<ToolResult, PluginError> {
    let args: LoadArgs = match parse_args(LOAD_TOOLS, arguments, MAX_ARGUMENT_BYTES) {
        Ok(args) => args,
        Err(result) => return Ok(result),
    };
    let group_id = args.group_id.trim().to_string();
    if let Some(problem) = names_problem(std::slice::from_ref(&group_id))
        .or_else(|| args.tool_names.as_deref().and_then(names_problem))
    {
        return Ok(ToolResult::error(format!("{LOAD_TOOLS}: {problem}")));
    }
    loads.refresh(agent)?;
    let members = match loads.group(agent, &group_id)? {
        GroupLookup::Members(members) => members,
        GroupLookup::Unknown(reason) | GroupLookup::Failed(reason) => {
            let output = serde_json::json!({
                "group_id": group_id,
                "status": "unavailable",
                "reason": reason,
            });
            return Ok(ToolResult::error_with(
                &output,
                group_unavailable(&group_id, &reason),
            ));
        }
    };
    let mut unavailable = Vec::new();
    let requested: Vec<String> = match &args.tool_names {
        None => members.clone(),
        Some(names) => {
            let mut wanted = Vec::new();
            for name in names {
                let name = loads.tool_named(agent, name.trim()).into_owned();
                if members.contains(&name) {
                    wanted.push(name);
                } else {
                    let reason = format!(
                        "not a tool of group `{group_id}` this agent may load{}",
                        loads
                            .hints()
                            .did_you_mean(&name, members.iter().map(String::as_str))
                    );
                    unavailable.push(Unavailable {
                        name: tool_name(name),
                        reason,
                    });
                }
            }
            wanted.sort();
            wanted.dedup();
            wanted
        }
    };
    let mut loaded = Vec::new();
    for name in &requested {
        let m = loads.activate(agent, name)?;
        match m.status {
            Status::Loaded | Status::AlreadyLoaded => loaded.push(name.clone()),
            Status::Unavailable => unavailable.push(Unavailable {
                name: tool_name(name.clone()),
                reason: m.reason.unwrap_or_default(),
            }),
        }
    }
    loads.install(agent)?;
    let remaining: Vec<String> = members
        .iter()
        .filter(|m| !loads.is_loaded(agent, m))
        .cloned()
        .collect();
    let tools = loaded
        .iter()
        .filter_map(|name| loads.tool_texts(agent, name));
    let (schemas, schemas_left_out) = within_budget(tools, MAX_LOAD_SCHEMA_BYTES);
    let expanded = remaining.is_empty();
    let mut room = MAX_LISTED_NAME_BYTES;
    let loaded_shown = loaded.iter().cloned().map(tool_name).collect();
    let (tool_names, tool_names_unlisted) = listed(loaded_shown, &mut room);
    let schemas_left_out = schemas_left_out.into_iter().map(tool_name).collect();
    let (schemas_left_out, schemas_left_out_unlisted) = listed(schemas_left_out, &mut room);
    let remaining = remaining.into_iter().map(tool_name).collect();
    let (remaining, remaining_unlisted) = listed(remaining, &mut room);
    let output = LoadOutput {
        group_id,
        expanded,
        tool_names,
        tool_names_unlisted,
        remaining,
        remaining_unlisted,
        schemas,
        schemas_left_out,
        schemas_left_out_unlisted,
        unavailable,
    };
    let text = output.text(loads.strategy());
    Ok(ToolResult::ok(&output, text))
}

/// A call to the forwarder, unwrapped: the real tool and arguments, loaded
/// on the way when the agent may load it; any other call is `Direct`.
pub fn resolve_call(
    loads: &mut impl Loads,
    agent: &str,
    tool: &str,
    arguments: &str,
) -> Result<Resolution, PluginError> {
    if tool != DEFERRED_TOOL_CALL {
        return Ok(Resolution::Direct);
    }
    let reject = |message: String| Ok(Resolution::Reject(ToolResult::error(message)));
    let args: ForwardArgs = match parse_args(DEFERRED_TOOL_CALL, arguments, MAX_FORWARD_BYTES) {
        Ok(args) => args,
        Err(result) => return Ok(Resolution::Reject(result)),
    };
    let name = args.tool_name.trim();
    if name.is_empty() || name.chars().count() > MAX_TOOL_NAME_CHARS {
        return reject(format!(
            "{DEFERRED_TOOL_CALL}: tool_name must have 1 to {MAX_TOOL_NAME_CHARS} characters"
        ));
    }
    let real_arguments = match args.arguments_json() {
        Ok(json) => json,
        Err(problem) => return reject(format!("{DEFERRED_TOOL_CALL}: {problem}")),
    };
    if is_guard(name, Strategy::Dispatch) {
        return reject(format!(
            "{DEFERRED_TOOL_CALL}: `{name}` is in your tool list; call it directly"
        ));
    }
    loads.refresh(agent)?;
    let name = &*loads.tool_named(agent, name);
    let shown = || tool_name(name.to_string());
    let implicitly_loaded = match loads.target(agent, name)? {
        Err(reason) => {
            return reject(format!(
                "{DEFERRED_TOOL_CALL}: `{}` could not be loaded: {reason}",
                shown()
            ));
        }
        Ok(Target::Unknown(reason)) => {
            return reject(format!("{DEFERRED_TOOL_CALL}: {reason}"));
        }
        Ok(Target::Changed) => {
            return reject(changed_hint(&shown(), Strategy::Dispatch));
        }
        Ok(Target::Ready) => false,
        Ok(Target::Pending) => {
            let m = loads.activate(agent, name)?;
            loads.install(agent)?;
            m.status == Status::Loaded
        }
    };
    Ok(Resolution::Forward {
        tool: name.to_string(),
        arguments: real_arguments,
        implicitly_loaded,
    })
}

/// What one call's activations share: the names it has matched, the families whose core it
/// has loaded, and the names the model asked for (which a core leaves to be matched as
/// asked).
struct Family<'a> {
    seen: &'a mut HashSet<String>,
    expanded: &'a mut HashSet<String>,
    asked: &'a HashSet<&'a str>,
}

/// Activates `name` and, when it loads, the core tools of every family it
/// belongs to: the match for `name`, and those of the core tools.
fn activate_with_family(
    loads: &mut impl Loads,
    agent: &str,
    name: &str,
    family: &mut Family<'_>,
) -> Result<(Match, Vec<Match>), PluginError> {
    let first = loads.activate(agent, name)?;
    let mut matches = Vec::new();
    if first.status != Status::Loaded {
        return Ok((first, matches));
    }
    for (tool, family_name) in loads.family_core(agent, name, family.expanded) {
        if !family.asked.contains(tool.as_str()) && family.seen.insert(tool.clone()) {
            let mut m = loads.activate(agent, &tool)?;
            m.via = Some(format!("the core of family `{family_name}`"));
            matches.push(m);
        }
    }
    Ok((first, matches))
}
