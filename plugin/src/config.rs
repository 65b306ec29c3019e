//! The plugin's configuration, as the profile gives it (a JSON object), and
//! the errors that point at the offending node.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::pattern::Pattern;

/// The shell's core built-ins that the zero-config preset keeps visible.
pub const PRESET_NO_DEFER: &[&str] = &[
    "read",
    "write",
    "edit",
    "bash",
    "glob",
    "grep",
    "web_search",
    "web_fetch",
    "ask_user_question",
    "skill",
];

/// The zero-config preset's tools that open a session (a first reply often
/// needs them): deferring them would cost a search round trip on most first
/// turns. Shipped with the preset only: a user who writes `defer` or
/// `noDefer` gets what they wrote.
pub const DEFAULT_NEVER_DEFER: &[&str] = &["web_search", "web_fetch"];

/// The zero-config preset's families that few sessions use, hidden even
/// under the token budget.
pub const DEFAULT_ALWAYS_DEFER: &[&str] = &["*browser_*"];

pub const DEFAULT_TOKEN_BUDGET: u32 = 8000;
pub const DEFAULT_CATALOG_TOKENS: u32 = 2000;
pub const DEFAULT_CATALOG_DESCRIPTION_CHARS: u32 = 60;

const KEYS: &[&str] = &[
    "defer",
    "noDefer",
    "deferToolLoading",
    "tokenBudget",
    "neverDefer",
    "alwaysDefer",
    "families",
    "catalog",
    "catalogTokens",
    "catalogDescriptionChars",
    "strategy",
    "groups",
];

/// The largest config accepted, in bytes of JSON.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;
/// The most entries one list (`defer`, `neverDefer`, a family's `members`, ...) may hold.
pub const MAX_LIST_ENTRIES: usize = 2_000;
/// The most families a config may declare.
pub const MAX_FAMILIES: usize = 500;
/// The most patterns a config may hold in all: each entry of `defer`, `noDefer`, `neverDefer`,
/// `alwaysDefer`, a family's `members` and `core` and a group's `members` is one. A pattern
/// with a `*` inside keeps a compiled regex (some 8 KB natively): 30,000 of them, within the
/// per-list limits, took 237 MB and half a second to configure natively, and the component
/// ran out of its memory; 10,000 take 82 MB and 0.2 s. Past the cap, entries are checked but
/// not compiled.
pub const MAX_PATTERNS: usize = 10_000;
/// The most characters the patterns with a `*` inside may hold in all: each compiles a regex
/// whose cost grows with its length and stars, so that 1,000 patterns of 999 characters, 499
/// of them stars (within every other limit), took 1.1 s and 140 MB to configure natively.
/// Real ones are a few dozen of some 20 characters. Past it, they are checked, not compiled.
pub const MAX_GLOB_CHARS: usize = 64 * 1024;
/// How much of an entry an error quotes back.
const MAX_QUOTED_CHARS: usize = 200;

/// What is wrong with a list of `len` entries at `at`, if it is too long.
fn too_many(at: &[&str], len: usize, max: usize) -> Option<ConfigError> {
    (len > max).then(|| ConfigError::new(pointer(at), format!("{len} entries; at most {max}")))
}

/// The patterns read so far across the config's lists, against [`MAX_PATTERNS`].
#[derive(Debug, Default)]
struct PatternCount {
    seen: usize,
    /// Where in the errors the one at the first pattern past the cap sits: it says how many
    /// there are once every list is read.
    past: Option<usize>,
    /// The characters of the patterns with a `*` inside so far, against [`MAX_GLOB_CHARS`].
    glob_chars: usize,
}

impl PatternCount {
    /// Counts the entry `text` at `at`: false past the cap, where the entry is only checked,
    /// not compiled. The first entry past it gets the error.
    fn admit(&mut self, at: &str, text: &str, errors: &mut Vec<ConfigError>) -> bool {
        self.seen += 1;
        if self.seen <= MAX_PATTERNS {
            return true;
        }
        if self.past.is_none() {
            self.past = Some(errors.len());
            errors.push(ConfigError::new(at, String::new()).with_entry(text));
        }
        false
    }

    /// Counts `pattern` (admitted by [`PatternCount::admit`], at `at`) against
    /// [`MAX_GLOB_CHARS`] when it compiles a glob: false past the cap, where it is only
    /// checked. The pattern that passes it gets the error.
    fn admit_glob(&mut self, at: &str, pattern: &str, errors: &mut Vec<ConfigError>) -> bool {
        if !crate::pattern::needs_glob(pattern) {
            return true;
        }
        let before = self.glob_chars;
        self.glob_chars += pattern.chars().count();
        if self.glob_chars <= MAX_GLOB_CHARS {
            return true;
        }
        if before <= MAX_GLOB_CHARS {
            errors.push(
                ConfigError::new(
                    at,
                    format!(
                        "the patterns with a `*` inside hold {} characters up to this one; at \
                         most {MAX_GLOB_CHARS} in all (each compiles a regex): write names, \
                         `prefix*` or `*suffix` patterns, or fewer",
                        self.glob_chars
                    ),
                )
                .with_entry(pattern),
            );
        }
        false
    }

    /// Says how many patterns there are in the error at the first past the cap.
    fn finish(self, errors: &mut [ConfigError]) {
        if let Some(error) = self.past.and_then(|i| errors.get_mut(i)) {
            error.message = format!(
                "{} patterns in all; at most {MAX_PATTERNS} across defer, noDefer, neverDefer, \
                 alwaysDefer, families and groups (this is pattern {})",
                self.seen,
                MAX_PATTERNS + 1
            );
        }
    }
}

/// One problem in the configuration, located by a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", if pointer.is_empty() { "config" } else { pointer.as_str() })]
pub struct ConfigError {
    pub pointer: String,
    pub entry: Option<String>,
    pub message: String,
}

impl ConfigError {
    fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            entry: None,
            message: message.into(),
        }
    }

    fn with_entry(mut self, entry: &str) -> Self {
        // A huge entry is quoted by its start: the pointer locates it.
        self.entry = Some(match entry.char_indices().nth(MAX_QUOTED_CHARS) {
            Some((end, _)) => format!("{}…", &entry[..end]),
            None => entry.to_string(),
        });
        self
    }
}

/// What a rule does to the tools it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Defer,
    NoDefer,
}

/// Where a rule came from, so a person can be told which line decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSource {
    /// The zero-config preset.
    Preset,
    /// An entry of the user's config: the list it sits in, its index and text. The text is
    /// shared: every tool the entry decides holds its source.
    Entry {
        list: &'static str,
        index: usize,
        text: Arc<str>,
    },
}

impl RuleSource {
    /// The JSON pointer of the entry in the user's config (`/defer/2`);
    /// `None` for the preset, which the user did not write.
    pub fn pointer(&self) -> Option<String> {
        match self {
            Self::Preset => None,
            Self::Entry { list, index, .. } => Some(pointer(&[list, &index.to_string()])),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub action: Action,
    pub pattern: Pattern,
    pub source: RuleSource,
}

/// The master switch, `deferToolLoading`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeferSwitch {
    On,
    Off,
    /// Defer only when the agent's schemas exceed the token budget.
    Auto,
}

/// What the system prompt says about deferred tools, `catalog`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogMode {
    /// Nothing: deferred tools are invisible until searched.
    None,
    /// Each deferred tool's name and the start of its description.
    Names,
    /// One line per server or group, with its tool names.
    Groups,
}

/// How loaded tools reach the model, `strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// A loaded tool joins the tools array from the next request.
    #[default]
    Inject,
    /// The tools array and the catalog never change; `load_tools` returns
    /// schemas and `deferred_tool_call` forwards calls in the same turn.
    Dispatch,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Self::Inject => "inject",
            Self::Dispatch => "dispatch",
        }
    }
}

/// A group of tools the profile declares (`groups:`): loadable as a whole
/// with `load_tools`, listed as one catalog line in `dispatch`.
#[derive(Debug, Clone)]
pub struct GroupDecl {
    pub name: String,
    pub display_name: Option<String>,
    pub description: String,
    pub members: PatternList,
}

/// A pattern list (`neverDefer`, `alwaysDefer`, a family's members).
#[derive(Debug, Clone, Default)]
pub struct PatternList {
    pub patterns: Vec<(String, Pattern)>,
}

impl PatternList {
    fn defaults(names: &[&str]) -> Self {
        Self {
            patterns: names
                .iter()
                .map(|n| {
                    (
                        n.to_string(),
                        Pattern::new(n).expect("default patterns compile"),
                    )
                })
                .collect(),
        }
    }

    /// The first entry matching `name`, as written.
    pub fn first_match(&self, name: &str) -> Option<(usize, &str)> {
        self.patterns
            .iter()
            .enumerate()
            .find(|(_, (_, p))| p.is_match(name))
            .map(|(i, (text, _))| (i, text.as_str()))
    }
}

/// Activating one member of a family also activates its core tools.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: String,
    pub members: PatternList,
    pub core: PatternList,
}

/// The `neverDefer` / `alwaysDefer` lists: the user's, when they wrote the
/// key, decide before anything shipped; otherwise the zero-config preset's
/// defaults, which decide after the user's entries and only with the preset.
#[derive(Debug, Clone, Default)]
pub struct ListSetting {
    pub list: PatternList,
    /// True when the user wrote the key (an empty list included).
    pub written: bool,
}

impl ListSetting {
    /// The first entry matching `name`, with where it came from.
    pub fn first_match(&self, key: &'static str, name: &str) -> Option<RuleSource> {
        let (index, text) = self.list.first_match(name)?;
        Some(if self.written {
            RuleSource::Entry {
                list: key,
                index,
                text: text.into(),
            }
        } else {
            RuleSource::Preset
        })
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub switch: DeferSwitch,
    /// All Defer/NoDefer rules, in the order written; precedence is decided
    /// by the policy.
    pub rules: Vec<Rule>,
    /// True when neither `defer` nor `noDefer` was given: the rules are the
    /// zero-config preset's.
    pub preset: bool,
    /// Schema tokens an agent may see before `auto` starts deferring.
    pub token_budget: u32,
    pub never_defer: ListSetting,
    pub always_defer: ListSetting,
    pub families: Vec<Family>,
    pub catalog: CatalogMode,
    /// The most tokens the catalog text may take.
    pub catalog_tokens: u32,
    /// How much of a description the `names` catalog keeps.
    pub catalog_description_chars: u32,
    pub strategy: Strategy,
    /// Groups the profile declares, in the order written.
    pub groups: Vec<GroupDecl>,
}

impl Default for Config {
    fn default() -> Self {
        Self::with_rules(None, None)
    }
}

impl Config {
    /// A config with the given rules (`None`: the preset) and defaults for
    /// everything else. `switch` is `None` when the user did not write
    /// `deferToolLoading`: the preset then decides by budget (`auto`), and
    /// rules the user wrote apply as written (`true`).
    fn with_rules(switch: Option<DeferSwitch>, rules: Option<Vec<Rule>>) -> Self {
        let preset = rules.is_none();
        // The shipped lists belong to the preset.
        let shipped = |names: &[&str]| ListSetting {
            list: if preset {
                PatternList::defaults(names)
            } else {
                PatternList::default()
            },
            written: false,
        };
        Self {
            switch: switch.unwrap_or(if preset {
                DeferSwitch::Auto
            } else {
                DeferSwitch::On
            }),
            rules: rules.unwrap_or_else(preset_rules),
            preset,
            token_budget: DEFAULT_TOKEN_BUDGET,
            never_defer: shipped(DEFAULT_NEVER_DEFER),
            always_defer: shipped(DEFAULT_ALWAYS_DEFER),
            families: Vec::new(),
            catalog: CatalogMode::None,
            catalog_tokens: DEFAULT_CATALOG_TOKENS,
            catalog_description_chars: DEFAULT_CATALOG_DESCRIPTION_CHARS,
            strategy: Strategy::Inject,
            groups: Vec::new(),
        }
    }
}

/// The zero-config preset: `Defer(*)`, with the core built-ins kept.
fn preset_rules() -> Vec<Rule> {
    let mut rules = vec![Rule {
        action: Action::Defer,
        pattern: Pattern::new("*").expect("`*` compiles"),
        source: RuleSource::Preset,
    }];
    rules.extend(PRESET_NO_DEFER.iter().map(|name| Rule {
        action: Action::NoDefer,
        pattern: Pattern::new(name).expect("a plain name compiles"),
        source: RuleSource::Preset,
    }));
    rules
}

impl Config {
    /// Parses the profile's config node, given as JSON text. `null` or an
    /// empty text means "no config": the zero-config preset. Every problem is
    /// reported, not just the first.
    pub fn from_json(text: &str) -> Result<Self, Vec<ConfigError>> {
        if text.len() > MAX_CONFIG_BYTES {
            return Err(vec![ConfigError::new(
                "",
                format!("config of {} bytes; at most {MAX_CONFIG_BYTES}", text.len()),
            )]);
        }
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            vec![ConfigError::new(
                "",
                format!("config is not valid JSON: {e}"),
            )]
        })?;
        Self::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Self, Vec<ConfigError>> {
        let map = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(map) => map,
            other => {
                return Err(vec![ConfigError::new(
                    "",
                    format!("expected a mapping of settings, found {}", kind(other)),
                )]);
            }
        };
        let mut errors = Vec::new();
        for key in map.keys() {
            if !KEYS.contains(&key.as_str()) {
                errors.push(ConfigError::new(pointer(&[key]), unknown_key_message(key)));
            }
        }
        let switch = parse_switch(map, &mut errors);
        let mut count = PatternCount::default();
        let defer = parse_list(map, "defer", Action::Defer, &mut count, &mut errors);
        let no_defer = parse_list(map, "noDefer", Action::NoDefer, &mut count, &mut errors);
        let rules = match (defer, no_defer) {
            (None, None) => None,
            (defer, no_defer) => Some(
                defer
                    .into_iter()
                    .flatten()
                    .chain(no_defer.into_iter().flatten())
                    .collect(),
            ),
        };
        let mut config = Self::with_rules(switch, rules);
        if let Some(budget) = parse_count(map, "tokenBudget", 1, &mut errors) {
            config.token_budget = budget;
        }
        if let Some(list) = parse_pattern_list(map, "neverDefer", &mut count, &mut errors) {
            config.never_defer = ListSetting {
                list,
                written: true,
            };
        }
        if let Some(list) = parse_pattern_list(map, "alwaysDefer", &mut count, &mut errors) {
            config.always_defer = ListSetting {
                list,
                written: true,
            };
        }
        config.families = parse_families(map, &mut count, &mut errors);
        if let Some(mode) = parse_catalog_mode(map, &mut errors) {
            config.catalog = mode;
        }
        if let Some(cap) = parse_count(map, "catalogTokens", 0, &mut errors) {
            config.catalog_tokens = cap;
        }
        if let Some(chars) = parse_count(map, "catalogDescriptionChars", 0, &mut errors) {
            config.catalog_description_chars = chars;
        }
        if let Some(strategy) = parse_strategy(map, &mut errors) {
            config.strategy = strategy;
        }
        config.groups = parse_groups(map, &mut count, &mut errors);
        count.finish(&mut errors);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

/// `deferToolLoading`, or `None` when the user did not write it.
fn parse_switch(map: &Map<String, Value>, errors: &mut Vec<ConfigError>) -> Option<DeferSwitch> {
    Some(match map.get("deferToolLoading")? {
        Value::Bool(true) => DeferSwitch::On,
        Value::Bool(false) => DeferSwitch::Off,
        Value::String(s) if s == "auto" => DeferSwitch::Auto,
        other => {
            errors.push(ConfigError::new(
                "/deferToolLoading",
                format!(
                    "expected true, false or \"auto\", found {}",
                    describe(other)
                ),
            ));
            DeferSwitch::On
        }
    })
}

/// A whole number of at least `min`, or `None` when the key is absent.
fn parse_count(
    map: &Map<String, Value>,
    key: &str,
    min: u32,
    errors: &mut Vec<ConfigError>,
) -> Option<u32> {
    let value = map.get(key)?;
    match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
        Some(n) if n >= min => Some(n),
        _ => {
            errors.push(ConfigError::new(
                pointer(&[key]),
                format!(
                    "expected a whole number of at least {min}, found {}",
                    describe(value)
                ),
            ));
            None
        }
    }
}

fn parse_catalog_mode(
    map: &Map<String, Value>,
    errors: &mut Vec<ConfigError>,
) -> Option<CatalogMode> {
    let value = map.get("catalog")?;
    match value.as_str() {
        Some("none") => Some(CatalogMode::None),
        Some("names") => Some(CatalogMode::Names),
        Some("groups") => Some(CatalogMode::Groups),
        _ => {
            errors.push(ConfigError::new(
                "/catalog",
                format!("expected none, names or groups, found {}", describe(value)),
            ));
            None
        }
    }
}

/// A list of plain names or `*` patterns (no modifiers), at `at`.
fn parse_patterns(
    value: &Value,
    at: &[&str],
    key: &'static str,
    count: &mut PatternCount,
    errors: &mut Vec<ConfigError>,
) -> PatternList {
    let mut list = PatternList::default();
    let Value::Array(items) = value else {
        errors.push(ConfigError::new(
            pointer(at),
            format!(
                "expected a list of tool names or patterns, found {}",
                kind(value)
            ),
        ));
        return list;
    };
    if let Some(error) = too_many(at, items.len(), MAX_LIST_ENTRIES) {
        errors.push(error);
        return list;
    }
    for (index, item) in items.iter().enumerate() {
        let index = index.to_string();
        let mut here = at.to_vec();
        here.push(&index);
        let Value::String(text) = item else {
            errors.push(ConfigError::new(
                pointer(&here),
                format!("expected a tool name or pattern, found {}", kind(item)),
            ));
            continue;
        };
        let admitted = count.admit(&pointer(&here), text, errors);
        let trimmed = text.trim();
        let problem = if trimmed.is_empty() {
            Some("blank entry: write a tool name or a pattern".to_string())
        } else if trimmed.contains(['(', ')']) {
            Some(format!(
                "`{trimmed}`: {key} takes plain names or `*` patterns, without Defer(...) or NoDefer(...)"
            ))
        } else {
            None
        };
        let compiled = match problem {
            Some(problem) => Err(problem),
            None if admitted && count.admit_glob(&pointer(&here), trimmed, errors) => {
                Pattern::new(trimmed).map(Some)
            }
            None => Pattern::check(trimmed).map(|()| None),
        };
        match compiled {
            Ok(Some(pattern)) => list.patterns.push((trimmed.to_string(), pattern)),
            Ok(None) => {}
            Err(message) => errors.push(ConfigError::new(pointer(&here), message).with_entry(text)),
        }
    }
    list
}

fn parse_pattern_list(
    map: &Map<String, Value>,
    key: &'static str,
    count: &mut PatternCount,
    errors: &mut Vec<ConfigError>,
) -> Option<PatternList> {
    let value = map.get(key)?;
    Some(parse_patterns(value, &[key], key, count, errors))
}

/// `families: {name: {members: [...], core: [...]}}`.
fn parse_families(
    map: &Map<String, Value>,
    count: &mut PatternCount,
    errors: &mut Vec<ConfigError>,
) -> Vec<Family> {
    let Some(value) = map.get("families") else {
        return Vec::new();
    };
    let Value::Object(families) = value else {
        errors.push(ConfigError::new(
            "/families",
            format!(
                "expected a mapping of family names to {{members, core}}, found {}",
                kind(value)
            ),
        ));
        return Vec::new();
    };
    if let Some(error) = too_many(&["families"], families.len(), MAX_FAMILIES) {
        errors.push(error);
        return Vec::new();
    }
    let mut parsed = Vec::new();
    for (name, family) in families {
        let Value::Object(fields) = family else {
            errors.push(ConfigError::new(
                pointer(&["families", name]),
                format!(
                    "expected a mapping with members and core, found {}",
                    kind(family)
                ),
            ));
            continue;
        };
        for key in fields.keys() {
            if key != "members" && key != "core" {
                errors.push(ConfigError::new(
                    pointer(&["families", name, key]),
                    format!("unknown key `{key}` in family `{name}`; expected members and core"),
                ));
            }
        }
        let mut list = |key: &'static str| match fields.get(key) {
            Some(value) => parse_patterns(value, &["families", name, key], key, count, errors),
            None => {
                errors.push(ConfigError::new(
                    pointer(&["families", name]),
                    format!("family `{name}` needs `{key}`"),
                ));
                PatternList::default()
            }
        };
        let members = list("members");
        let core = list("core");
        parsed.push(Family {
            name: name.clone(),
            members,
            core,
        });
    }
    parsed
}

fn parse_strategy(map: &Map<String, Value>, errors: &mut Vec<ConfigError>) -> Option<Strategy> {
    let value = map.get("strategy")?;
    match value.as_str() {
        Some("inject") => Some(Strategy::Inject),
        Some("dispatch") => Some(Strategy::Dispatch),
        _ => {
            errors.push(ConfigError::new(
                "/strategy",
                format!("expected inject or dispatch, found {}", describe(value)),
            ));
            None
        }
    }
}

/// The longest group name, display name or description accepted.
pub const MAX_GROUP_TEXT_CHARS: usize = 2_000;

/// `groups: {name: {displayName?, description, members: [...]}}`.
fn parse_groups(
    map: &Map<String, Value>,
    count: &mut PatternCount,
    errors: &mut Vec<ConfigError>,
) -> Vec<GroupDecl> {
    let Some(value) = map.get("groups") else {
        return Vec::new();
    };
    let Value::Object(groups) = value else {
        errors.push(ConfigError::new(
            "/groups",
            format!(
                "expected a mapping of group names to {{displayName, description, members}}, found {}",
                kind(value)
            ),
        ));
        return Vec::new();
    };
    if let Some(error) = too_many(&["groups"], groups.len(), MAX_FAMILIES) {
        errors.push(error);
        return Vec::new();
    }
    let mut parsed = Vec::new();
    for (name, group) in groups {
        let at = |key: &str| pointer(&["groups", name, key]);
        if name.trim().is_empty() || name.chars().count() > MAX_GROUP_TEXT_CHARS {
            errors.push(ConfigError::new(
                pointer(&["groups", name]),
                format!("a group name has 1 to {MAX_GROUP_TEXT_CHARS} characters"),
            ));
            continue;
        }
        let Value::Object(fields) = group else {
            errors.push(ConfigError::new(
                pointer(&["groups", name]),
                format!(
                    "expected a mapping with description and members, found {}",
                    kind(group)
                ),
            ));
            continue;
        };
        for key in fields.keys() {
            if !["displayName", "description", "members"].contains(&key.as_str()) {
                errors.push(ConfigError::new(
                    at(key),
                    format!(
                        "unknown key `{key}` in group `{name}`; expected displayName, description and members{}",
                        crate::suggest::did_you_mean(key, ["displayName", "description", "members"])
                    ),
                ));
            }
        }
        let mut text = |key: &str, required: bool| match fields.get(key) {
            Some(Value::String(s))
                if !s.trim().is_empty() && s.chars().count() <= MAX_GROUP_TEXT_CHARS =>
            {
                Some(s.trim().to_string())
            }
            Some(other) => {
                errors.push(ConfigError::new(
                    at(key),
                    format!(
                        "expected a text of 1 to {MAX_GROUP_TEXT_CHARS} characters, found {}",
                        describe(other)
                    ),
                ));
                None
            }
            None => {
                if required {
                    errors.push(ConfigError::new(
                        pointer(&["groups", name]),
                        format!("group `{name}` needs `{key}`"),
                    ));
                }
                None
            }
        };
        let display_name = text("displayName", false);
        let description = text("description", true).unwrap_or_default();
        let members = match fields.get("members") {
            Some(value) => parse_patterns(
                value,
                &["groups", name, "members"],
                "members",
                count,
                errors,
            ),
            None => {
                errors.push(ConfigError::new(
                    pointer(&["groups", name]),
                    format!("group `{name}` needs `members`"),
                ));
                PatternList::default()
            }
        };
        parsed.push(GroupDecl {
            name: name.clone(),
            display_name,
            description,
            members,
        });
    }
    parsed
}

/// Parses `defer` or `noDefer`. `None` when the key is absent, which is not
/// the same as an empty list: an empty `defer` defers nothing.
fn parse_list(
    map: &Map<String, Value>,
    key: &'static str,
    action: Action,
    count: &mut PatternCount,
    errors: &mut Vec<ConfigError>,
) -> Option<Vec<Rule>> {
    let value = map.get(key)?;
    let Value::Array(items) = value else {
        errors.push(ConfigError::new(
            pointer(&[key]),
            format!(
                "expected a list of tool names or patterns, found {}",
                kind(value)
            ),
        ));
        return Some(Vec::new());
    };
    if let Some(error) = too_many(&[key], items.len(), MAX_LIST_ENTRIES) {
        errors.push(error);
        return Some(Vec::new());
    }
    let mut rules = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = pointer(&[key, &index.to_string()]);
        let Value::String(text) = item else {
            errors.push(ConfigError::new(
                at,
                format!("expected a tool name or pattern, found {}", kind(item)),
            ));
            continue;
        };
        let admitted = count.admit(&at, text, errors);
        match parse_entry(text, action).and_then(|(action, pattern)| {
            if admitted && count.admit_glob(&at, &pattern, errors) {
                Pattern::new(&pattern).map(|pattern| Some((action, pattern)))
            } else {
                Pattern::check(&pattern).map(|()| None)
            }
        }) {
            Ok(None) => {}
            Ok(Some((action, pattern))) => rules.push(Rule {
                action,
                pattern,
                source: RuleSource::Entry {
                    list: key,
                    index,
                    text: text.as_str().into(),
                },
            }),
            Err(message) => errors.push(ConfigError::new(at, message).with_entry(text)),
        }
    }
    Some(rules)
}

/// Parses one entry: a bare pattern takes the list's own action; `Defer(p)`
/// and `NoDefer(p)` (any case, whitespace trimmed) override it.
pub fn parse_entry(text: &str, list_action: Action) -> Result<(Action, String), String> {
    let entry = text.trim();
    if entry.is_empty() {
        return Err("blank entry: write a tool name or a pattern".into());
    }
    let Some(open) = entry.find('(') else {
        if entry.contains(')') {
            return Err(format!("unbalanced parentheses in `{entry}`"));
        }
        return Ok((list_action, entry.to_string()));
    };
    let modifier = entry[..open].trim();
    let Some(inner) = entry[open + 1..].strip_suffix(')') else {
        return Err(format!(
            "unbalanced parentheses in `{entry}`: expected `Defer(pattern)` or `NoDefer(pattern)`"
        ));
    };
    let action = match modifier.to_ascii_lowercase().as_str() {
        "defer" => Action::Defer,
        "nodefer" => Action::NoDefer,
        "" => {
            return Err(format!(
                "missing modifier before `(` in `{entry}`: expected `Defer(...)` or `NoDefer(...)`"
            ));
        }
        _ => {
            return Err(format!(
                "unknown modifier `{modifier}`: expected `Defer` or `NoDefer`"
            ));
        }
    };
    let inner = inner.trim();
    if inner.is_empty() {
        return Err(format!("`{entry}` has no pattern inside the parentheses"));
    }
    if let Some(nested) = inner.find('(') {
        let word = inner[..nested].trim().to_ascii_lowercase();
        if word == "defer" || word == "nodefer" {
            return Err(format!(
                "nested modifiers are not allowed: `{entry}`; write one `Defer(...)` or `NoDefer(...)` per entry"
            ));
        }
        return Err(format!("unbalanced parentheses in `{entry}`"));
    }
    if inner.contains(')') {
        return Err(format!("unbalanced parentheses in `{entry}`"));
    }
    Ok((action, inner.to_string()))
}

fn unknown_key_message(key: &str) -> String {
    match crate::suggest::closest(key, KEYS.iter().copied()) {
        Some(known) => format!("unknown key `{key}`; did you mean `{known}`?"),
        None => format!("unknown key `{key}`; expected one of: {}", KEYS.join(", ")),
    }
}

/// A JSON pointer (RFC 6901) to a node.
fn pointer(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A value's kind, and the value itself when it is short, for messages.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() <= 20 => format!("\"{s}\""),
        Value::Number(n) => format!("{} {n}", kind(value)),
        other => kind(other).to_string(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(text: &str) -> Result<(Action, String), String> {
        parse_entry(text, Action::Defer)
    }

    #[test]
    fn bare_names_take_the_list_action() {
        assert_eq!(entry(" bash "), Ok((Action::Defer, "bash".into())));
        assert_eq!(
            parse_entry("bash", Action::NoDefer),
            Ok((Action::NoDefer, "bash".into()))
        );
    }

    #[test]
    fn modifiers_override_and_ignore_case_and_space() {
        assert_eq!(entry("NoDefer(x)"), Ok((Action::NoDefer, "x".into())));
        assert_eq!(
            entry("  nodefer ( x_* ) "),
            Ok((Action::NoDefer, "x_*".into()))
        );
        assert_eq!(
            parse_entry("DEFER(*)", Action::NoDefer),
            Ok((Action::Defer, "*".into()))
        );
    }

    #[test]
    fn bad_entries_say_why() {
        for (text, needle) in [
            ("", "blank"),
            ("   ", "blank"),
            ("Defer()", "no pattern"),
            ("NoDefer(  )", "no pattern"),
            ("Defer(NoDefer(x))", "nested"),
            ("Later(x)", "unknown modifier `Later`"),
            ("Defer(x", "unbalanced"),
            ("x)", "unbalanced"),
            ("Defer(a(b)", "unbalanced"),
            ("(x)", "missing modifier"),
        ] {
            let err = entry(text).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn no_keys_means_preset() {
        for value in [json!(null), json!({}), json!({"deferToolLoading": true})] {
            let config = Config::from_value(&value).unwrap();
            assert!(config.preset);
            assert_eq!(config.rules.len(), 1 + PRESET_NO_DEFER.len());
        }
    }

    #[test]
    fn either_key_replaces_the_preset() {
        let config = Config::from_value(&json!({"noDefer": ["bash"]})).unwrap();
        assert!(!config.preset);
        assert_eq!(config.rules.len(), 1);
        let config = Config::from_value(&json!({"defer": []})).unwrap();
        assert!(!config.preset);
        assert!(config.rules.is_empty());
    }

    #[test]
    fn every_error_is_reported_with_its_pointer() {
        let errors = Config::from_value(&json!({
            "defer": ["ok", "", 3, "Defer()"],
            "noDefr": [],
            "deferToolLoading": "yes",
        }))
        .unwrap_err();
        let pointers: Vec<_> = errors.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/noDefr",
                "/deferToolLoading",
                "/defer/1",
                "/defer/2",
                "/defer/3"
            ]
        );
        assert!(errors[0].message.contains("did you mean `noDefer`"));
        assert_eq!(errors[4].entry.as_deref(), Some("Defer()"));
    }

    proptest::proptest! {
        /// Any entry text parses or is rejected with a reason; never a panic.
        #[test]
        fn entries_never_panic(text in ".{0,40}") {
            let _ = parse_entry(&text, Action::Defer);
            let _ = Config::from_value(&json!({"defer": [text.clone()], "noDefer": [text]}));
        }

        /// Any config text is accepted or rejected with located errors.
        #[test]
        fn config_text_never_panics(text in ".{0,60}") {
            if let Err(errors) = Config::from_json(&text) {
                proptest::prop_assert!(!errors.is_empty());
            }
        }
    }

    #[test]
    fn sizes_are_bounded_with_located_errors() {
        let huge = "x".repeat(700_000);
        let errors = Config::from_json(&format!(r#"{{"defer": ["ok", "{huge}"]}}"#)).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].pointer, "/defer/1");
        assert_eq!(
            errors[0].message,
            "pattern of 700000 characters; at most 1000"
        );
        assert_eq!(
            errors[0].entry.as_ref().map(|e| e.chars().count()),
            Some(MAX_QUOTED_CHARS + 1)
        );

        let many: Vec<String> = (0..=MAX_LIST_ENTRIES).map(|i| format!("t{i}")).collect();
        let config = serde_json::json!({"families": {"f": {"members": many, "core": []}}});
        let errors = Config::from_json(&config.to_string()).unwrap_err();
        assert_eq!(errors[0].pointer, "/families/f/members");
        assert_eq!(errors[0].message, "2001 entries; at most 2000");

        let errors = Config::from_json(&" ".repeat(MAX_CONFIG_BYTES + 1)).unwrap_err();
        assert_eq!(
            errors[0].message,
            "config of 1048577 bytes; at most 1048576"
        );
    }

    /// A config of `groups` (names to how many members) after one entry in each other list but
    /// alwaysDefer, two in the family.
    fn config_of(groups: &[(&str, usize)]) -> Value {
        let groups: Map<String, Value> = groups
            .iter()
            .map(|&(name, n)| {
                let members: Vec<String> = (0..n).map(|i| format!("{name}_{i}")).collect();
                (
                    name.to_string(),
                    json!({"description": "d", "members": members}),
                )
            })
            .collect();
        json!({
            "defer": ["d*"],
            "noDefer": ["n"],
            "neverDefer": ["v"],
            "alwaysDefer": [],
            "families": {"f": {"members": ["m_*"], "core": ["c"]}},
            "groups": groups,
        })
    }

    #[test]
    fn patterns_are_capped_across_the_whole_config() {
        // 5 entries outside groups, 4 full groups and one of 1,995: the cap, accepted.
        let groups = [("g0", 2_000), ("g1", 2_000), ("g2", 2_000), ("g3", 2_000)];
        let at_cap = [&groups[..], &[("g4", 1_995)]].concat();
        let config = Config::from_value(&config_of(&at_cap)).unwrap();
        let members: usize = config.groups.iter().map(|g| g.members.patterns.len()).sum();
        assert_eq!(members + 5, MAX_PATTERNS);

        // One more (in alwaysDefer, read before the groups): the last member of g4 is the
        // first past the cap. A group after it is still checked (its blank entry is
        // reported, nothing is compiled), and so is every other key.
        let past = [&at_cap[..], &[("g5", 0)]].concat();
        let mut config = config_of(&past);
        config["alwaysDefer"] = json!(["a"]);
        config["groups"]["g5"]["members"] = json!(["ok_*_y", " "]);
        config["tokenBudget"] = json!(0);
        let errors = Config::from_value(&config).unwrap_err();
        let pointers: Vec<_> = errors.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/tokenBudget",
                "/groups/g4/members/1994",
                "/groups/g5/members/1"
            ]
        );
        assert_eq!(
            errors[1].to_string(),
            "/groups/g4/members/1994: 10003 patterns in all; at most 10000 across defer, \
             noDefer, neverDefer, alwaysDefer, families and groups (this is pattern 10001)"
        );
        assert_eq!(errors[1].entry.as_deref(), Some("g4_1994"));
        assert!(errors[2].message.contains("blank entry"));
    }

    #[test]
    fn the_cap_counts_every_list() {
        let many = |prefix: &str, n: usize| -> Vec<String> {
            (0..n).map(|i| format!("{prefix}{i}")).collect()
        };
        // 2,000 in each of defer, noDefer, neverDefer and the group, 2 in the family and
        // 1,998 in alwaysDefer: the cap.
        let mut config = config_of(&[("g0", 2_000)]);
        config["alwaysDefer"] = json!(many("a", 1_998));
        config["defer"] = json!(many("d", 2_000));
        config["noDefer"] = json!(many("n", 2_000));
        config["noDefer"][0] = json!("Defer(x)");
        config["neverDefer"] = json!(many("v", 2_000));
        assert!(Config::from_value(&config).is_ok());
        // Two more in alwaysDefer, read before the groups: the group's last two are past it.
        config["alwaysDefer"] = json!(many("a", 2_000));
        let errors = Config::from_value(&config).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].pointer, "/groups/g0/members/1998");
        assert!(
            errors[0]
                .message
                .starts_with("10002 patterns in all; at most 10000 ")
        );
    }

    /// Patterns with a `*` inside compile a regex each: their characters are capped in all
    /// (1,000 of 999 characters took 1.1 s and 140 MB), names and `prefix*` are not.
    #[test]
    fn the_characters_of_patterns_with_a_star_inside_are_capped() {
        // 64 patterns of 1,000 characters, half of them stars: 64,000, under the cap.
        let starry = |i: usize| format!("{i:03}{}", "a*".repeat(498)) + "z";
        let under: Vec<String> = (0..64).map(starry).collect();
        let names: Vec<String> = (0..2_000)
            .map(|i| format!("{i}_{}*", "n".repeat(900)))
            .collect();
        let config = json!({"neverDefer": under, "alwaysDefer": names});
        assert!(Config::from_value(&config).is_ok());
        // Three more in defer, read first: neverDefer's 63rd passes 65,536 and is refused,
        // and the one after it is checked, not compiled (it is blank: still reported).
        let mut config = config;
        let defer: Vec<String> = (97..100).map(|i| format!("Defer({})", starry(i))).collect();
        config["defer"] = json!(defer);
        config["neverDefer"][63] = json!(" ");
        let errors = Config::from_value(&config).unwrap_err();
        let pointers: Vec<_> = errors.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(pointers, ["/neverDefer/62", "/neverDefer/63"]);
        assert_eq!(
            errors[0].message,
            "the patterns with a `*` inside hold 66000 characters up to this one; at most 65536 \
             in all (each compiles a regex): write names, `prefix*` or `*suffix` patterns, or fewer"
        );
        assert_eq!(errors[0].entry.as_deref().map(str::len), Some(200 + 3));
        assert!(errors[1].message.contains("blank entry"), "{errors:?}");
    }

    #[test]
    fn wrong_shapes_are_rejected() {
        let errors = Config::from_json("[1]").unwrap_err();
        assert!(errors[0].message.contains("expected a mapping"));
        let errors = Config::from_value(&json!({"defer": "bash"})).unwrap_err();
        assert_eq!(errors[0].pointer, "/defer");
        assert!(errors[0].message.contains("found a string"));
        let errors = Config::from_json("{").unwrap_err();
        assert!(errors[0].message.contains("not valid JSON"));
    }
}
