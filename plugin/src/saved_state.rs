//! The load state a shell saves between runs (`export-state`, `restore-state`): its JSON
//! format, the bounds a restore keeps, and the checks of what a state holds. Both ways apply
//! the same bounds, so a state the plugin writes is one it reads back.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::json_size::json_len;
use crate::shown;

/// The format name and version of an exported load state.
pub const STATE_FORMAT: &str = "lazy-tools/load-state";
pub const STATE_VERSION: u32 = 1;
/// The largest state `restore-state` reads.
pub const MAX_STATE_BYTES: usize = 16 << 20;
/// The most agents, loads of all agents together, and groups named as loaded of all agents
/// together, a state may hold: far more than sessions save, while what a restore keeps (and
/// an export writes back) stays about a hundred megabytes of the plugin's memory at most
/// (390,000 agents in 16 MiB took an export past the plugin's 256 MiB).
pub const MAX_STATE_AGENTS: usize = 10_000;
pub const MAX_STATE_LOADS: usize = 300_000;
pub const MAX_STATE_GROUPS: usize = 300_000;
/// The longest agent id, tool name and group name a state may hold, in characters.
const MAX_STATE_NAME_CHARS: usize = 1024;
/// A restored agent's loads are carried forward through this many runs that do not create
/// it, then dropped.
pub const MAX_UNUSED_RUNS: u32 = 8;

/// An exported load state: per agent, the tools loaded (with the fingerprint of the
/// definition loaded, as hex) and how far each group is loaded (for people; restoring
/// derives it again).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedState {
    format: String,
    version: u32,
    strategy: String,
    #[serde(deserialize_with = "agents_once")]
    agents: BTreeMap<String, SavedAgent>,
}

/// One agent of a state as it is written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedAgent {
    #[serde(deserialize_with = "loads_within")]
    tools: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "groups_within")]
    groups: BTreeMap<String, String>,
    /// How many runs in a row ended without creating the agent: its loads are carried
    /// forward, but not forever (a shell that names each run's sub-agents anew would grow
    /// the state with every run).
    #[serde(default, skip_serializing_if = "is_zero")]
    unused_runs: u32,
}

fn is_zero(runs: &u32) -> bool {
    *runs == 0
}

impl SavedAgent {
    /// What a save writes of agent `id` of this run: its `loads` (name -> fingerprint) and
    /// how far it loaded each group, `full` or `partial`, without the names a restore refuses
    /// (a shell may register a tool whose name holds a line break; the plugin shows it
    /// escaped, but a state holding it could not be resumed from). `None` for an id a restore
    /// refuses. Each name left out is said in `left_out`.
    pub fn of_run(
        id: &str,
        loads: &BTreeMap<String, u64>,
        mut groups: BTreeMap<String, String>,
        left_out: &mut Vec<String>,
    ) -> Option<Self> {
        if let Some(problem) = name_problem(id) {
            left_out.push(format!("agent `{}`: {problem}", escaped(id)));
            return None;
        }
        let mut refused = |kind: &str, name: &str| {
            let problem = name_problem(name)?;
            left_out.push(format!(
                "agent `{id}`, {kind} `{}`: {problem}",
                escaped(name)
            ));
            Some(())
        };
        let mut saved = Self::new(loads, BTreeMap::new());
        saved
            .tools
            .retain(|tool, _| refused("tool", tool).is_none());
        groups.retain(|group, _| refused("group", group).is_none());
        saved.groups = groups;
        Some(saved)
    }

    /// The names of the tools it loaded.
    pub fn loads(&self) -> impl Iterator<Item = &String> {
        self.tools.keys()
    }

    /// How far it loaded each group.
    pub fn groups(&self) -> &BTreeMap<String, String> {
        &self.groups
    }

    fn new(loads: &BTreeMap<String, u64>, groups: BTreeMap<String, String>) -> Self {
        let tools = loads
            .iter()
            .map(|(name, fingerprint)| (name.clone(), format!("{fingerprint:016x}")))
            .collect();
        Self {
            tools,
            groups,
            unused_runs: 0,
        }
    }
}

/// The loads a state gives an agent, as the plugin keeps them until the agent is created.
#[derive(Debug)]
pub struct Restored {
    pub loads: BTreeMap<String, u64>,
    /// How far its groups were loaded, for people: saved again as they were read.
    pub groups: BTreeMap<String, String>,
    /// The runs in a row that ended without creating it, this one not counted.
    pub unused_runs: u32,
}

impl Restored {
    /// What an export writes of it, one more run not created; `None` once it has been
    /// carried through [`MAX_UNUSED_RUNS`] runs, or when it holds no loads.
    pub fn carried(&self) -> Option<SavedAgent> {
        let unused_runs = self.unused_runs.saturating_add(1);
        if self.loads.is_empty() || unused_runs >= MAX_UNUSED_RUNS {
            return None;
        }
        let mut saved = SavedAgent::new(&self.loads, self.groups.clone());
        saved.unused_runs = unused_runs;
        Some(saved)
    }
}

/// What an agent holds, counted against the bounds of one state: its loads, its loaded
/// groups, and the bytes of its id and names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holding {
    pub loads: usize,
    pub groups: usize,
    pub bytes: usize,
}

impl Holding {
    /// What agent `id` holds with `loads` and `groups` (name, how far), its bytes as a
    /// compact save writes them.
    pub fn of<'a>(
        id: &str,
        loads: impl Iterator<Item = &'a String>,
        groups: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let (mut count, mut bytes) = (0, json_len(id) + AGENT_AROUND);
        for name in loads {
            count += 1;
            bytes += json_len(name) + LOAD_AROUND;
        }
        let mut group_count = 0;
        for (name, how) in groups {
            group_count += 1;
            bytes += json_len(name) + json_len(how) + 2;
        }
        Self {
            loads: count,
            groups: group_count,
            bytes,
        }
    }

    /// What is written of agent `id`.
    #[cfg(test)]
    pub fn of_saved(id: &str, saved: &SavedAgent) -> Self {
        Self::of(id, saved.tools.keys(), pairs(&saved.groups))
    }

    /// The larger of the two in each measure.
    pub fn larger(self, other: Self) -> Self {
        Self {
            loads: self.loads.max(other.loads),
            groups: self.groups.max(other.groups),
            bytes: self.bytes.max(other.bytes),
        }
    }
}

/// A state's groups (name -> how far) as [`Holding::of`] takes them.
pub fn pairs(groups: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
    groups
        .iter()
        .map(|(name, how)| (name.as_str(), how.as_str()))
}

/// What a compact save writes around a load's name (`:"<16 hex digits>",`) and an agent's
/// id (`:{"tools":{},"groups":{},"unused_runs":7},`), and around all agents.
const LOAD_AROUND: usize = 20;
const AGENT_AROUND: usize = 44;
const STATE_AROUND: usize = 128;

/// What agents hold together: how many, their loads and groups, and their bytes as a
/// compact save writes them (with what a state writes around them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    agents: usize,
    loads: usize,
    groups: usize,
    bytes: usize,
}

impl Total {
    pub fn of(agents: impl Iterator<Item = Holding>) -> Self {
        agents.fold(
            Self {
                agents: 0,
                loads: 0,
                groups: 0,
                bytes: STATE_AROUND,
            },
            |total, agent| Self {
                agents: total.agents + 1,
                loads: total.loads + agent.loads,
                groups: total.groups + agent.groups,
                bytes: total.bytes + agent.bytes,
            },
        )
    }

    /// The bound of one state it passes, if any.
    pub fn within_bounds(&self) -> Result<(), String> {
        Counts::default().add(self.agents, self.loads, self.groups)?;
        if self.bytes > MAX_STATE_BYTES {
            return Err(format!(
                "more than the {MAX_STATE_BYTES} bytes a state may take"
            ));
        }
        Ok(())
    }

    /// Whether it holds more than `before` in any measure.
    pub fn grows(&self, before: &Total) -> bool {
        self.agents > before.agents
            || self.loads > before.loads
            || self.groups > before.groups
            || self.bytes > before.bytes
    }
}

/// Agents, loads and groups counted against the bounds, as a state is read or written.
#[derive(Clone, Copy, Default)]
struct Counts {
    agents: usize,
    loads: usize,
    groups: usize,
}

impl Counts {
    fn add(self, agents: usize, loads: usize, groups: usize) -> Result<Self, String> {
        let counts = Self {
            agents: self.agents + agents,
            loads: self.loads + loads,
            groups: self.groups + groups,
        };
        if counts.agents > MAX_STATE_AGENTS {
            return Err(format!("more than {MAX_STATE_AGENTS} agents"));
        }
        if counts.loads > MAX_STATE_LOADS {
            return Err(too_many_loads());
        }
        if counts.groups > MAX_STATE_GROUPS {
            return Err(too_many_groups());
        }
        Ok(counts)
    }
}

fn too_many_loads() -> String {
    format!("more than {MAX_STATE_LOADS} loads, all agents together")
}

fn too_many_groups() -> String {
    format!("more than {MAX_STATE_GROUPS} loaded groups, all agents together")
}

/// What a save left out of this run's agents to keep to the bounds a restore reads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LeftOut {
    pub agents: usize,
    pub loads: usize,
}

/// Writes a state: the agents of `live` (those of this run, the ones to keep first first)
/// that fit in the bounds a restore reads, in order (past them, an agent is left out whole and
/// counted in [`LeftOut`]: a run that forks an agent of many loads, or loads past what a
/// restore gave it, is still saved),
/// then as many of `carried` (restored for agents this run has not created) as the bounds
/// leave room for, the ones carried through the fewest runs first. Written for people, or
/// compact when that is longer than a restore reads (the bounds count bytes as a compact
/// save writes them, so it always fits).
///
/// Each agent comes with what it holds as a restore will count it (at least what is written
/// of it), so that a restore of the same registry takes it.
pub fn write(
    strategy: &str,
    live: Vec<(String, SavedAgent, Holding)>,
    mut carried: Vec<(String, SavedAgent, Holding)>,
) -> Result<(String, LeftOut), String> {
    let mut counts = Counts::default();
    let mut bytes = STATE_AROUND;
    let mut agents = BTreeMap::new();
    let mut left_out = LeftOut::default();
    for (id, agent, holding) in live {
        let more_bytes = bytes + holding.bytes;
        match counts.add(1, holding.loads, holding.groups) {
            Ok(more) if more_bytes <= MAX_STATE_BYTES => {
                (counts, bytes) = (more, more_bytes);
                agents.insert(id, agent);
            }
            _ => {
                left_out.agents += 1;
                left_out.loads += agent.tools.len();
            }
        }
    }
    carried.sort_by(|(a, x, _), (b, y, _)| x.unused_runs.cmp(&y.unused_runs).then(a.cmp(b)));
    for (id, agent, holding) in carried {
        let more_bytes = bytes + holding.bytes;
        let Ok(more) = counts.add(1, holding.loads, holding.groups) else {
            // The rest were carried as long or longer: the oldest are dropped first.
            break;
        };
        if more_bytes > MAX_STATE_BYTES {
            break;
        }
        (counts, bytes) = (more, more_bytes);
        agents.insert(id, agent);
    }
    let saved = SavedState {
        format: STATE_FORMAT.into(),
        version: STATE_VERSION,
        strategy: strategy.into(),
        agents,
    };
    // Each written into at most the bytes a restore reads: a state too long for that is
    // never held whole.
    let mut text = Bounded::default();
    if serde_json::to_writer_pretty(&mut text, &saved).is_ok() {
        return Ok((text.into_string(), left_out));
    }
    drop(text);
    let mut text = Bounded::default();
    if serde_json::to_writer(&mut text, &saved).is_ok() {
        return Ok((text.into_string(), left_out));
    }
    Err(format!(
        "the load state of {} agents is more than the {MAX_STATE_BYTES} bytes a restore \
         reads: not saved",
        saved.agents.len(),
    ))
}

/// Reads a state saved with `strategy`: each agent's loads, checked entry by entry. The
/// error names the entry, with what the state holds escaped.
pub fn read(text: &str, strategy: &str) -> Result<BTreeMap<String, Restored>, String> {
    if text.len() > MAX_STATE_BYTES {
        return Err(format!(
            "a saved state of {} bytes; at most {MAX_STATE_BYTES}",
            text.len()
        ));
    }
    ENTRIES_LEFT.set(Left {
        loads: MAX_STATE_LOADS,
        groups: MAX_STATE_GROUPS,
    });
    // The values a state holds are quoted escaped: the shell prints the error as it is.
    let saved: SavedState = serde_json::from_str(text)
        .map_err(|e| format!("not a lazy-tools load state: {}", escaped(&e.to_string())))?;
    if saved.format != STATE_FORMAT || saved.version != STATE_VERSION {
        return Err(format!(
            "a load state of format `{}` version {}; this plugin reads `{STATE_FORMAT}` version \
             {STATE_VERSION}",
            escaped(&saved.format),
            saved.version
        ));
    }
    if saved.strategy != strategy {
        return Err(format!(
            "the state was saved with strategy `{}`, but this plugin runs `{strategy}`: \
             resume with the same strategy",
            escaped(&saved.strategy)
        ));
    }
    let mut restored = BTreeMap::new();
    for (agent, saved) in saved.agents {
        restored.insert(agent.clone(), checked(&agent, saved)?);
    }
    Ok(restored)
}

/// One saved agent's entries checked, as the plugin keeps them.
fn checked(agent: &str, saved: SavedAgent) -> Result<Restored, String> {
    let at = escaped(agent);
    if let Some(problem) = name_problem(agent) {
        return Err(format!("agent `{at}`: {problem}"));
    }
    if saved.unused_runs >= MAX_UNUSED_RUNS {
        return Err(format!(
            "agent `{at}`: unused_runs {}; a state carries an agent through at most {} runs \
             that do not create it",
            saved.unused_runs,
            MAX_UNUSED_RUNS - 1
        ));
    }
    let mut loads = BTreeMap::new();
    for (tool, fingerprint) in saved.tools {
        if let Some(problem) = name_problem(&tool) {
            return Err(format!(
                "agent `{at}`, tool `{}`: {problem}",
                escaped(&tool)
            ));
        }
        let Some(value) = parse_fingerprint(&fingerprint) else {
            return Err(format!(
                "agent `{at}`, tool `{}`: `{}` is not a fingerprint (16 hexadecimal digits)",
                escaped(&tool),
                escaped(&fingerprint)
            ));
        };
        loads.insert(tool, value);
    }
    for (group, how) in &saved.groups {
        if let Some(problem) = name_problem(group) {
            return Err(format!(
                "agent `{at}`, group `{}`: {problem}",
                escaped(group)
            ));
        }
        if how != "full" && how != "partial" {
            return Err(format!(
                "agent `{at}`, group `{}`: `{}` is neither `full` nor `partial`",
                escaped(group),
                escaped(how)
            ));
        }
    }
    Ok(Restored {
        loads,
        groups: saved.groups,
        unused_runs: saved.unused_runs,
    })
}

/// The loads and groups a state being read may still hold, all agents together: counted
/// while it is parsed, so that a state of many tiny entries is refused before it is held
/// whole (two million in 16 MiB grew the plugin's memory by hundreds of megabytes). Serde's
/// derive passes nothing down to a field, so the count lives beside the parse, in the one
/// thread that reads.
#[derive(Clone, Copy)]
struct Left {
    loads: usize,
    groups: usize,
}

thread_local! {
    static ENTRIES_LEFT: Cell<Left> = const { Cell::new(Left { loads: 0, groups: 0 }) };
}

fn loads_within<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    deserializer.deserialize_map(Within(Entries::Loads))
}

fn groups_within<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    deserializer.deserialize_map(Within(Entries::Groups))
}

#[derive(Clone, Copy)]
enum Entries {
    Loads,
    Groups,
}

/// A map of names to text, each named once, that takes one of [`ENTRIES_LEFT`] per entry it
/// reads.
struct Within(Entries);

impl<'de> serde::de::Visitor<'de> for Within {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of names to text")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = BTreeMap::new();
        while let Some((name, value)) = map.next_entry::<String, String>()? {
            let mut left = ENTRIES_LEFT.get();
            let (slot, exceeded, kind) = match self.0 {
                Entries::Loads => (&mut left.loads, too_many_loads as fn() -> String, "tool"),
                Entries::Groups => (&mut left.groups, too_many_groups as fn() -> String, "group"),
            };
            // Which of two entries the state meant is anyone's guess (a JSON map keeps the
            // last), as for an agent listed twice.
            if entries.contains_key(&name) {
                return Err(serde::de::Error::custom(format!(
                    "{kind} `{}` is listed twice",
                    escaped(&name)
                )));
            }
            let Some(fewer) = slot.checked_sub(1) else {
                return Err(serde::de::Error::custom(exceeded()));
            };
            *slot = fewer;
            ENTRIES_LEFT.set(left);
            entries.insert(name, value);
        }
        Ok(entries)
    }
}

/// A state's agents, each named once (with two entries for one agent, which the state meant
/// is anyone's guess: a JSON map keeps the last), and at most [`MAX_STATE_AGENTS`] of them.
fn agents_once<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, SavedAgent>, D::Error> {
    struct Agents;
    impl<'de> serde::de::Visitor<'de> for Agents {
        type Value = BTreeMap<String, SavedAgent>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of agent ids to their loads")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut agents = BTreeMap::new();
            while let Some((id, agent)) = map.next_entry::<String, SavedAgent>()? {
                if agents.len() == MAX_STATE_AGENTS {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX_STATE_AGENTS} agents"
                    )));
                }
                if agents.contains_key(&id) {
                    return Err(serde::de::Error::custom(format!(
                        "agent `{}` is listed twice",
                        escaped(&id)
                    )));
                }
                agents.insert(id, agent);
            }
            Ok(agents)
        }
    }
    deserializer.deserialize_map(Agents)
}

/// What is wrong with an agent id, a tool name or a group name a saved state holds, if
/// anything: no shell names one empty, with a control or bidirectional character, or
/// thousands of characters long.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an empty name".into());
    }
    if name.contains(shown::is_unsafe) {
        return Some("a name with a control or bidirectional character".into());
    }
    let chars = name.chars().count();
    (chars > MAX_STATE_NAME_CHARS)
        .then(|| format!("a name of {chars} characters; at most {MAX_STATE_NAME_CHARS}"))
}

/// A state's text as it is written, refusing to grow past [`MAX_STATE_BYTES`].
#[derive(Default)]
struct Bounded(Vec<u8>);

impl std::io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + bytes.len() > MAX_STATE_BYTES {
            return Err(std::io::Error::other("longer than a restore reads"));
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Bounded {
    fn into_string(self) -> String {
        // serde_json writes UTF-8.
        String::from_utf8(self.0).unwrap_or_default()
    }
}

/// A saved fingerprint: exactly 16 hexadecimal digits, as `export-state` writes it (no sign,
/// no blanks, no fewer digits).
fn parse_fingerprint(text: &str) -> Option<u64> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

/// `text` with each control, line or paragraph separator and bidirectional control
/// ([`shown::is_unsafe`]) escaped as Rust writes it (`\n`, `\u{202e}`): a value read from a
/// saved state, quoted in an error the shell prints as it is, cannot start a line of its own.
fn escaped(text: &str) -> Cow<'_, str> {
    if !text.contains(shown::is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown::is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Value, json};

    use super::*;

    const FINGERPRINT: &str = "0123456789abcdef";

    /// A state of `agents` as JSON, in this format, saved under the `inject` strategy.
    pub(crate) fn state(agents: Value) -> String {
        json!({
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "strategy": "inject",
            "agents": agents,
        })
        .to_string()
    }

    fn one_agent(agent: &str, tool: &str, groups: Value, unused_runs: u32) -> String {
        state(json!({
            agent: { "tools": { tool: FINGERPRINT }, "groups": groups, "unused_runs": unused_runs }
        }))
    }

    /// The groups a state names are checked as its agents and tools are: a name a shell
    /// would print as several lines, or a value no export writes, is refused with the entry.
    #[test]
    fn a_states_groups_are_checked_like_its_names() {
        let read_one = |groups: Value| read(&one_agent("main", "t", groups, 0), "inject");
        let kept = read_one(json!({"weather": "full", "notes": "partial"})).unwrap();
        assert_eq!(kept["main"].groups.len(), 2);
        assert_eq!(
            read_one(json!({"a\u{2028}b\u{202e}": "full"})).unwrap_err(),
            "agent `main`, group `a\\u{2028}b\\u{202e}`: a name with a control or \
             bidirectional character"
        );
        assert_eq!(
            read_one(json!({"weather": "whatever\nforged"})).unwrap_err(),
            "agent `main`, group `weather`: `whatever\\nforged` is neither `full` nor `partial`"
        );
        assert_eq!(
            read_one(json!({"": "full"})).unwrap_err(),
            "agent `main`, group ``: an empty name"
        );
    }

    /// Groups count against a bound of their own while the state is parsed: a state of many
    /// tiny group entries is refused before it is held whole.
    #[test]
    fn a_state_of_more_groups_than_a_restore_keeps_is_refused_while_it_is_read() {
        let groups: serde_json::Map<String, Value> = (0..=MAX_STATE_GROUPS)
            .map(|i| (format!("g{i}"), json!("full")))
            .collect();
        let text = one_agent("main", "t", Value::Object(groups), 0);
        let error = read(&text, "inject").unwrap_err();
        assert!(
            error.starts_with(
                "not a lazy-tools load state: more than 300000 loaded groups, all agents \
                 together at line 1 column "
            ),
            "{error}"
        );
        // The count starts again with each read.
        let groups: serde_json::Map<String, Value> = (0..MAX_STATE_GROUPS)
            .map(|i| (format!("g{i}"), json!("full")))
            .collect();
        let text = one_agent("main", "t", Value::Object(groups), 0);
        assert_eq!(
            read(&text, "inject").unwrap()["main"].groups.len(),
            MAX_STATE_GROUPS
        );
        assert_eq!(
            read(&text, "inject").unwrap()["main"].groups.len(),
            MAX_STATE_GROUPS
        );
    }

    /// An export writes at most `MAX_UNUSED_RUNS - 1` runs, and a restore reads that many.
    #[test]
    fn unused_runs_are_read_up_to_what_an_export_writes() {
        let last = MAX_UNUSED_RUNS - 1;
        let restored = read(&one_agent("main", "t", json!({}), last), "inject").unwrap();
        assert_eq!(restored["main"].unused_runs, last);
        assert!(restored["main"].carried().is_none(), "carried no further");
        let error = read(
            &one_agent("main", "t", json!({}), MAX_UNUSED_RUNS),
            "inject",
        );
        assert_eq!(
            error.unwrap_err(),
            "agent `main`: unused_runs 8; a state carries an agent through at most 7 runs that \
             do not create it"
        );
    }

    /// A name is at most 1,024 characters (not bytes), and a bidirectional control alone is
    /// refused as a line break is.
    #[test]
    fn a_states_names_are_bounded_in_characters_and_shown_safely() {
        let longest = "名".repeat(MAX_STATE_NAME_CHARS);
        assert!(read(&one_agent("main", &longest, json!({}), 0), "inject").is_ok());
        let longer = "a".repeat(MAX_STATE_NAME_CHARS + 1);
        let error = read(&one_agent(&longer, "t", json!({}), 0), "inject").unwrap_err();
        assert!(
            error.ends_with("`: a name of 1025 characters; at most 1024"),
            "{}",
            &error[error.len() - 60..]
        );
        let error = read(&one_agent("main", "t\u{202e}x", json!({}), 0), "inject").unwrap_err();
        assert_eq!(
            error,
            "agent `main`, tool `t\\u{202e}x`: a name with a control or bidirectional character"
        );
    }

    #[test]
    fn a_state_longer_than_a_restore_reads_is_refused_before_it_is_parsed() {
        let text = " ".repeat(MAX_STATE_BYTES + 1);
        assert_eq!(
            read(&text, "inject").unwrap_err(),
            "a saved state of 16777217 bytes; at most 16777216"
        );
    }

    /// Agent `id` to save, counted as what is written of it.
    fn saving(id: String, agent: SavedAgent) -> (String, SavedAgent, Holding) {
        let holding = Holding::of_saved(&id, &agent);
        (id, agent, holding)
    }

    /// This run's agents past the bytes a restore reads are left out whole and counted: the
    /// save failed whole, and every save after it.
    #[test]
    fn a_save_leaves_out_this_runs_agents_past_the_bytes_and_counts_them() {
        let tools: BTreeMap<String, u64> = (0..MAX_STATE_LOADS / 2)
            .map(|i| (format!("{i:0>60}"), 0))
            .collect();
        let live = (0..2)
            .map(|a| saving(format!("a{a}"), SavedAgent::new(&tools, BTreeMap::new())))
            .collect();
        let (text, left_out) = write("inject", live, Vec::new()).unwrap();
        assert_eq!(
            left_out,
            LeftOut {
                agents: 1,
                loads: MAX_STATE_LOADS / 2
            }
        );
        assert!(text.len() <= MAX_STATE_BYTES);
        assert_eq!(
            read(&text, "inject").unwrap().keys().collect::<Vec<_>>(),
            ["a0"]
        );
    }

    /// A save leaves out carried agents that would take it past the bytes a restore reads,
    /// as it does past the counts: two agents of 100,000 long names each fit every count but
    /// not the bytes, and the save failed whole.
    #[test]
    fn a_save_drops_carried_agents_past_the_bytes_a_restore_reads() {
        let loads = |prefix: &str| -> BTreeMap<String, u64> {
            (0..100_000)
                .map(|i| (format!("{prefix}{i:06}{}", "x".repeat(80)), 7))
                .collect()
        };
        let mut left_out = Vec::new();
        let main = SavedAgent::of_run("main", &loads("m"), BTreeMap::new(), &mut left_out).unwrap();
        let mut later =
            SavedAgent::of_run("later", &loads("l"), BTreeMap::new(), &mut left_out).unwrap();
        later.unused_runs = 1;
        let live = vec![saving("main".into(), main)];
        let carried = vec![saving("later".into(), later)];
        let (text, left_out) = write("inject", live, carried).unwrap();
        assert_eq!(left_out, LeftOut::default());
        assert!(text.len() <= MAX_STATE_BYTES);
        let restored = read(&text, "inject").unwrap();
        assert_eq!(restored.keys().collect::<Vec<_>>(), ["main"]);
    }
}
