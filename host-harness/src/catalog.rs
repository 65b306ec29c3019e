//! MCP tool catalogs in the `shared/catalogs/*.json` format:
//! `{"servers": [{"name", "description", "tools": [MCP Tool objects]}]}`.
//!
//! The shell registers an MCP tool as `<server>__<tool>`: tool names repeat
//! across servers, model APIs want names of `[A-Za-z0-9_-]`, and a server
//! prefix lets a profile defer a whole server with one pattern.

use std::collections::hash_map::{Entry, HashMap};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::strict_json::error_in_characters;
use crate::terminal::escape;
use crate::tool::{Origin, SearchText, Tool};

/// The most tools a catalog holds: lazy-tools keeps about 2.5 KB of memory per tool (24.6 MB at
/// 10,000), so 100,000 took it past its 256 MiB at configure, an error that named the profile
/// rather than the catalog.
pub const MAX_CATALOG_TOOLS: usize = 50_000;

#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    #[serde(deserialize_with = "objects")]
    pub servers: Vec<Server>,
    /// Keys the shell does not read that neither MCP nor an extension (`x-`) defines, each
    /// with how many entries hold it and the first place (`/servers/0/tools/3/method`): a
    /// catalog made from another source may carry its own fields, which are kept out of the
    /// session; [`Catalog::load`] says so once.
    #[serde(skip)]
    pub unread_keys: Vec<UnreadKey>,
}

/// A key of a catalog that nothing reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadKey {
    pub key: String,
    pub entries: usize,
    pub first: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Server {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(deserialize_with = "objects")]
    pub tools: Vec<McpTool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct McpTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `null` is read as no parameters, as a missing schema is.
    #[serde(
        rename = "inputSchema",
        default = "empty_schema",
        deserialize_with = "schema_or_empty"
    )]
    pub input_schema: Value,
    /// Search text beyond the definition: `{"keywords": [...], "examples": [...],
    /// "descriptions": [...]}`, each optional.
    #[serde(rename = "x-lazy-tools", default, deserialize_with = "object_or_null")]
    pub search_text: Option<SearchText>,
}

/// A struct read from a JSON object only: serde also reads a struct from an array, by
/// position, so `["fs", "", []]` would be a server named `fs`, and a catalog so written loads
/// as something its author did not mean.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(json: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object with named keys")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        json.deserialize_map(ObjectVisitor(std::marker::PhantomData))
            .map(Object)
    }
}

/// A list of structs, each read from a JSON object only (see [`Object`]).
fn objects<'de, D, T>(json: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let objects = Vec::<Object<T>>::deserialize(json)?;
    Ok(objects.into_iter().map(|Object(item)| item).collect())
}

/// A struct read from a JSON object only, or nothing from `null`.
fn object_or_null<'de, D, T>(json: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Object<T>>::deserialize(json)?.map(|Object(item)| item))
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn schema_or_empty<'de, D: serde::Deserializer<'de>>(schema: D) -> Result<Value, D::Error> {
    let schema = Option::<crate::strict_json::JsonValue>::deserialize(schema)?;
    Ok(schema.map_or_else(empty_schema, |schema| schema.0))
}

impl Catalog {
    /// A catalog of `servers`, made rather than read.
    pub fn of(servers: Vec<Server>) -> Self {
        Self {
            servers,
            unread_keys: Vec::new(),
        }
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::bounded::read_text(path, crate::bounded::MAX_CATALOG_BYTES, "a catalog")
            .with_context(|| format!("reading the catalog {}", path.display()))?;
        let catalog = Self::parse(&text)
            .with_context(|| format!("parsing the catalog {}", path.display()))?;
        if !catalog.unread_keys.is_empty() {
            let keys: Vec<String> = catalog
                .unread_keys
                .iter()
                .take(5)
                .map(|k| format!("`{}` ({} entries, first {})", k.key, k.entries, k.first))
                .collect();
            let more = catalog.unread_keys.len().saturating_sub(keys.len());
            tracing::warn!(
                "the catalog {} holds keys the shell does not read: {}{}",
                escape(&path.display().to_string()),
                escape(&keys.join(", ")),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        Ok(catalog)
    }

    pub fn parse(text: &str) -> Result<Self> {
        // A byte-order mark (an editor's) is no part of the JSON, which serde_json refuses.
        // serde reads a struct from an array too (by position): `[[...]]` would be a catalog.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let start = text.trim_start_matches([' ', '\t', '\n', '\r']);
        if !start.starts_with('{') {
            bail!(
                "a catalog is a JSON object, `{{\"servers\": [{{\"name\", \"description\", \
                 \"tools\": [...]}}]}}`; this file starts with {}",
                match start.chars().next() {
                    None => "nothing".to_owned(),
                    Some(c) => format!("`{}`", escape(&c.to_string())),
                }
            );
        }
        let mut unread = Vec::new();
        let mut json = serde_json::Deserializer::from_str(text);
        let in_characters = |e: serde_json::Error| anyhow!(error_in_characters(&e, text));
        let mut catalog: Catalog =
            serde_ignored::deserialize(&mut json, |path| unread.push(pointer(&path)))
                .map_err(in_characters)?;
        json.end().map_err(in_characters)?;
        // A key written twice anywhere, a key nothing reads too, is refused at its place (the
        // JS host refuses the same).
        if let Some((at, key)) = crate::strict_json::repeated_key(text) {
            let (line, column) = crate::bounded::line_and_column(text, at);
            bail!(
                "duplicate key `{}` at line {line} column {column}",
                escape(&key)
            );
        }
        for key in unread.iter().filter(|key| !may_go_unread(key)) {
            if let Some(problem) = misspelt_key(key) {
                bail!("{}: {problem}", join(key));
            }
            let name = key.last().map_or("", String::as_str);
            match catalog.unread_keys.iter_mut().find(|k| k.key == name) {
                Some(seen) => seen.entries += 1,
                None => catalog.unread_keys.push(UnreadKey {
                    key: name.to_owned(),
                    entries: 1,
                    first: join(key),
                }),
            }
        }
        catalog.check()?;
        Ok(catalog)
    }

    /// Each tool of a server is listed once, by a name that is not empty, with an object
    /// schema, as an MCP server's `tools/list` must; a server has a name. Two tools never share
    /// an id (`server/tool`: server `a/b`'s tool `c` and server `a`'s tool `b/c` would), so that
    /// a query file's gold names one tool; and no server's tools begin as another's do (`a__`,
    /// `a__b__`), so that `Defer(a__*)` reaches one server.
    fn check(&self) -> Result<()> {
        let tools: usize = self.servers.iter().map(|s| s.tools.len()).sum();
        if tools > MAX_CATALOG_TOOLS {
            bail!(
                "/servers: {tools} tools; a catalog here holds at most {MAX_CATALOG_TOOLS} (a \
                 plugin such as lazy-tools indexes every tool it may show, within its 256 MiB of \
                 memory)"
            );
        }
        let mut first: HashMap<(&str, &str), String> = HashMap::new();
        let mut ids: HashMap<String, (&str, &str, String)> = HashMap::new();
        let mut prefixes: BTreeMap<String, usize> = BTreeMap::new();
        for (s, server) in self.servers.iter().enumerate() {
            let server_name = escape(&server.name);
            if server.name.is_empty() {
                bail!("/servers/{s}/name: a server has an empty name");
            }
            prefixes
                .entry(format!("{}__", clean_name(&server.name)))
                .or_insert(s);
            for (t, tool) in server.tools.iter().enumerate() {
                let place = format!("/servers/{s}/tools/{t}");
                if tool.name.is_empty() {
                    bail!("{place}: a tool of server `{server_name}` has an empty name");
                }
                if let Some(kind) = not_an_object_schema(&tool.input_schema) {
                    bail!(
                        "{place}/inputSchema: tool `{}` of server `{server_name}` takes {kind}; \
                         an MCP tool's inputSchema is a JSON Schema object with \"type\": \"object\"",
                        escape(&tool.name),
                    );
                }
                if let Some(text) = &tool.search_text {
                    check_search_text(text, &format!("{place}/x-lazy-tools"))?;
                }
                match first.entry((&server.name, &tool.name)) {
                    Entry::Occupied(at) => bail!(
                        "{place}: tool `{}` of server `{server_name}` is listed twice (first at {})",
                        escape(&tool.name),
                        at.get()
                    ),
                    Entry::Vacant(entry) => {
                        entry.insert(place.clone());
                    }
                }
                let id = format!("{}/{}", server.name, tool.name);
                match ids.entry(id) {
                    Entry::Occupied(at) => {
                        let (other_server, other_tool, other_place) = at.get();
                        bail!(
                            "{place}: tool `{}` of server `{server_name}` and tool `{}` of server \
                             `{}` (at {other_place}) have one id, `{}`: a server or tool name \
                             holding `/` makes `server/tool` split two ways",
                            escape(&tool.name),
                            escape(other_tool),
                            escape(other_server),
                            escape(at.key())
                        );
                    }
                    Entry::Vacant(entry) => {
                        entry.insert((&server.name, &tool.name, place));
                    }
                }
            }
        }
        // A prefix that begins another comes right before one that it begins, in sorted order.
        let sorted: Vec<(&String, &usize)> = prefixes.iter().collect();
        for pair in sorted.windows(2) {
            let ((shorter, &a), (longer, &b)) = (pair[0], pair[1]);
            if longer.starts_with(shorter.as_str()) {
                bail!(
                    "/servers/{b}/name: server `{}` names its tools `{longer}<tool>`, which begin \
                     as server `{}`'s (/servers/{a}) do: a pattern such as `Defer({shorter}*)` \
                     would reach both",
                    escape(&self.servers[b].name),
                    escape(&self.servers[a].name),
                );
            }
        }
        Ok(())
    }

    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }

    /// Every tool as the shell registers it, with its catalog id
    /// (`server/tool`), in catalog order.
    pub fn tools(&self) -> impl Iterator<Item = (String, Tool)> + '_ {
        let mut names = ShellNames::default();
        self.servers.iter().flat_map(move |server| {
            let names: Vec<String> = server
                .tools
                .iter()
                .map(|tool| names.name(&server.name, &tool.name))
                .collect();
            server.tools.iter().zip(names).map(move |(tool, name)| {
                let id = format!("{}/{}", server.name, tool.name);
                let registered = Tool::new(
                    name,
                    tool.description.clone(),
                    Origin::Mcp(server.name.clone()),
                )
                .with_parameters(tool.input_schema.clone())
                .with_search_text(tool.search_text.clone());
                (id, registered)
            })
        })
    }
}

/// The keys of an MCP `Tool` that the shell does not read (MCP 2025-11-25), and the catalog's
/// own that only say where it came from; a key starting with `x-` is an extension. Other keys
/// are kept out of the session with a warning, unless one looks like a misspelt key the shell
/// reads (`descripton`): that would lose text without a word, so it is an error.
const UNREAD_TOOL_KEYS: &[&str] = &[
    "title",
    "outputSchema",
    "annotations",
    "icons",
    "execution",
    "_meta",
];
const UNREAD_SERVER_KEYS: &[&str] = &["package", "version", "title", "_meta"];
const UNREAD_CATALOG_KEYS: &[&str] = &["source"];

fn may_go_unread(key: &[String]) -> bool {
    let known: &[&str] = match key.len() {
        1 => UNREAD_CATALOG_KEYS,
        3 => UNREAD_SERVER_KEYS,
        5 => UNREAD_TOOL_KEYS,
        _ => &[],
    };
    key.last()
        .is_some_and(|last| last.starts_with("x-") || known.contains(&last.as_str()))
}

/// Why `key` (a path to a key nothing reads) is an error, when it looks like a misspelling of
/// a key the shell reads at its level: the same letters in another case or with `_` or `-`
/// (`input_schema`), or nearly the same (`descripton`, `tool`).
fn misspelt_key(key: &[String]) -> Option<String> {
    let last = key.last().map_or("", String::as_str);
    let (what, read): (&str, &[&str]) = match key.len() {
        1 => ("the catalog", &["servers"]),
        3 => ("a server", &["name", "description", "category", "tools"]),
        _ => (
            "a tool",
            &["name", "description", "inputSchema", "x-lazy-tools"],
        ),
    };
    let plain = |k: &str| -> String {
        k.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    // A key much longer than the one it is near is no slip of the keyboard (`___description`
    // padded to a megabyte), and is not quoted back whole: it loads as unread.
    let near = read.iter().find(|read| {
        last.chars().count() <= read.len() + MAX_SEPARATORS
            && is_misspelling(&plain(read), &plain(last))
    })?;
    Some(format!(
        "unknown key `{}` in {what}: did you mean `{near}`? The shell reads {}; an extension's \
         key starts with `x-`",
        escape(last),
        read.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The most characters a misspelt key may have past the key it is near: separators
/// (`input_schema`, `x_lazy_tools`) and the one edit.
const MAX_SEPARATORS: usize = 3;

/// True when `key` is `read` mistyped, both `plain`: one edit away (a letter added, lost or
/// changed, or two side by side swapped). A key two edits away is more often another key
/// (`description_zh`), as is one that only begins alike (`namespace`): those load, named once
/// as unread. Stricter than `suggest`'s hint measure, which only words a message: this one
/// refuses a file.
fn is_misspelling(read: &str, key: &str) -> bool {
    strsim::osa_distance(read, key) <= 1
}

/// A serde path as the segments of a JSON pointer.
fn pointer(path: &serde_ignored::Path) -> Vec<String> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut segments = pointer(parent);
            segments.push(index.to_string());
            segments
        }
        Path::Map { parent, key } => {
            let mut segments = pointer(parent);
            segments.push(key.clone());
            segments
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => pointer(parent),
    }
}

/// A JSON pointer (RFC 6901) to `segments`, escaped for a terminal.
fn join(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| format!("/{}", escape(&s.replace('~', "~0").replace('/', "~1"))))
        .collect()
}

/// What `schema` is, when it is not an object schema: an MCP tool takes a JSON object whose
/// `type`, if given, is `object`.
fn not_an_object_schema(schema: &Value) -> Option<String> {
    Some(match schema {
        Value::Object(object) => match object.get("type") {
            None => return None,
            Some(Value::String(kind)) if kind == "object" => return None,
            Some(kind) => format!("a schema of type {}", escape(&kind.to_string())),
        },
        Value::Array(_) => "an array".to_owned(),
        Value::String(_) => "a string".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Null => "null".to_owned(),
    })
}

/// Gives tools their shell names, each name once. Two tools whose names differ only in
/// characters the shell replaces (`get.forecast` and `get-forecast`) would share one; the
/// later gets `-2` (or `-3`, ...), so that neither is lost and each call reaches its tool.
#[derive(Debug, Default)]
pub struct ShellNames {
    taken: HashSet<String>,
    /// Per stem a suffix is written after (the plain name, cut to leave room for the suffix
    /// when it is long) and the suffix's width, the suffix to try next: every one of that width
    /// below it is taken (nothing is given back), so a listing of many names that clean alike,
    /// or that share a cut stem, costs one try each, not one per name before it.
    next_suffix: HashMap<(String, usize), usize>,
    /// Names tried so far, for the tests.
    tries: usize,
}

impl ShellNames {
    /// The shell name of tool `tool` of server `server`, unless an earlier tool took it.
    pub fn name(&mut self, server: &str, tool: &str) -> String {
        let plain = shell_name(server, tool);
        self.tries += 1;
        if self.taken.insert(plain.clone()) {
            return plain;
        }
        let mut next = 2;
        loop {
            // The suffix fits within the longest name (the plain name is ASCII); a longer
            // suffix cuts a longer stem's end.
            let width = format!("-{next}").len();
            let stem = &plain[..plain.len().min(MAX_SHELL_NAME_CHARS - width)];
            // The smallest suffix of this width: 2, then 10, 100, ...
            let smallest = if width == 2 {
                2
            } else {
                10usize.pow(width as u32 - 2)
            };
            let key = (stem.to_owned(), width);
            let first_free = self.next_suffix.entry(key).or_insert(smallest);
            if *first_free > next {
                next = *first_free;
                if format!("-{next}").len() != width {
                    continue;
                }
            }
            *first_free = next + 1;
            let name = format!("{stem}-{next}");
            next += 1;
            self.tries += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// The longest name the shell gives a tool: the longest the plugin's guard tools take back
/// (`tool_search {tool_names}`, `defer_execute_tool`). A longer one is cut, and ends in a hash
/// of the whole (the first 8 bytes of its SHA-256, which every host has at hand), so that names
/// cut alike still differ.
pub const MAX_SHELL_NAME_CHARS: usize = crate::shell_core::MAX_TOOL_NAME_CHARS;

/// The name the shell gives tool `tool` of MCP server `server`.
pub fn shell_name(server: &str, tool: &str) -> String {
    let whole = whole_shell_name(server, tool);
    if whole.len() <= MAX_SHELL_NAME_CHARS {
        return whole;
    }
    // Every character is ASCII here, so a byte index is a character boundary.
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(whole.as_bytes());
    let hash: String = std::iter::once("-".to_owned())
        .chain(digest[..8].iter().map(|byte| format!("{byte:02x}")))
        .collect();
    format!("{}{hash}", &whole[..MAX_SHELL_NAME_CHARS - hash.len()])
}

fn whole_shell_name(server: &str, tool: &str) -> String {
    format!("{}__{}", clean_name(server), clean_name(tool))
}

/// `name` with every character but letters, digits, `_` and `-` made `-`.
fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The most texts of one kind (`keywords`, `examples`, `descriptions`) a tool's `x-lazy-tools`
/// may hold, and the longest text: what lazy-tools reads of them (it would drop the rest
/// without a word), and a bound on what a catalog makes the plugin index, so that a catalog
/// too large is refused here, at its place, not later as a plugin that ran out of time.
pub const MAX_SEARCH_TEXTS: usize = lazy_tools::registry::MAX_ENRICHMENT_ITEMS;
pub const MAX_SEARCH_TEXT_CHARS: usize = lazy_tools::registry::MAX_ENRICHMENT_CHARS;

fn check_search_text(text: &SearchText, place: &str) -> Result<()> {
    for (kind, texts) in [
        ("keywords", &text.keywords),
        ("examples", &text.examples),
        ("descriptions", &text.descriptions),
    ] {
        if texts.len() > MAX_SEARCH_TEXTS {
            bail!(
                "{place}/{kind}: {} texts; a tool's `{kind}` holds at most {MAX_SEARCH_TEXTS}",
                texts.len()
            );
        }
        for (i, one) in texts.iter().enumerate() {
            let chars = one.chars().count();
            if chars > MAX_SEARCH_TEXT_CHARS {
                bail!(
                    "{place}/{kind}/{i}: {chars} characters; a text here holds at most \
                     {MAX_SEARCH_TEXT_CHARS}"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_too_long_for_the_plugin_is_cut_and_ends_in_a_hash_of_the_whole() {
        let long = "x".repeat(400);
        let name = shell_name("server", &long);
        assert_eq!(name.len(), MAX_SHELL_NAME_CHARS);
        assert!(name.starts_with("server__xxx"), "{name}");
        let other = shell_name("server", &format!("{long}y"));
        assert_eq!(other.len(), MAX_SHELL_NAME_CHARS);
        assert_ne!(name, other);
        assert_eq!(name, shell_name("server", &long), "the same every time");
        // The JS host names it alike (hosts/js/test/shell.test.js holds the same name).
        assert!(name.ends_with("-4734b5a448156761"), "{name}");
        // Two tools whose cut names clean alike: the second's suffix fits too.
        let mut names = ShellNames::default();
        let first = names.name("server", &format!("{long}.a"));
        let second = names.name("server", &format!("{long}-a"));
        assert_ne!(first, second);
        assert!(
            second.len() <= MAX_SHELL_NAME_CHARS && second.ends_with("-2"),
            "{second}"
        );
    }

    #[test]
    fn names_are_qualified_and_clean() {
        assert_eq!(shell_name("github", "create_issue"), "github__create_issue");
        assert_eq!(
            shell_name("Ant Design Components", "list.all"),
            "Ant-Design-Components__list-all"
        );
    }

    /// Each name that cleans alike takes the first suffix free, a name of its own that looks
    /// like a suffixed one included; thousands of them (a hostile server's listing) each get
    /// one in turn (each was tried against every suffix before it: 17 s for 10,000 names).
    #[test]
    fn names_that_clean_alike_take_the_first_suffix_free() {
        let mut names = ShellNames::default();
        let given: Vec<String> = ["t.x", "t-x", "t-x-3", "t x", "t/x"]
            .iter()
            .map(|tool| names.name("s", tool))
            .collect();
        assert_eq!(
            given,
            ["s__t-x", "s__t-x-2", "s__t-x-3", "s__t-x-4", "s__t-x-5"]
        );

        let mut names = ShellNames::default();
        let alike: Vec<String> = (0..3_000)
            .map(|i| names.name("s", &format!("t{}", char::from_u32(0x4e00 + i).unwrap())))
            .collect();
        assert_eq!(alike[0], "s__t-");
        assert_eq!(alike[2_999], "s__t--3000");
        assert_eq!(alike.iter().collect::<HashSet<_>>().len(), 3_000);
        assert!(names.tries <= 2 * 3_000, "{} tries", names.tries);

        // Names of the longest length that differ only where a suffix cuts them share the
        // stem it is written after: each pair (`y-...XY`, `y.…XY`) takes the next suffix free
        // of that stem in one try (it tried every suffix taken before it).
        let mut names = ShellNames::default();
        let long = "y".repeat(MAX_SHELL_NAME_CHARS - "s__y-".len() - 3);
        let mut given = Vec::new();
        for i in 0..1_000 {
            let tool = format!("y-{long}{i:03}");
            assert_eq!(shell_name("s", &tool).len(), MAX_SHELL_NAME_CHARS);
            given.push(names.name("s", &tool));
            given.push(names.name("s", &tool.replacen('-', ".", 1)));
        }
        assert_eq!(given.iter().collect::<HashSet<_>>().len(), 2_000);
        assert!(given.iter().all(|n| n.len() <= MAX_SHELL_NAME_CHARS));
        assert!(names.tries <= 3 * 2_000, "{} tries", names.tries);

        // A stem that is one name's whole and another's cut, while the suffix grows from one
        // digit to two: the shorter name still takes `-2` (it was given `-11`).
        let long = "y".repeat(248);
        let mut tools: Vec<String> = "-.!@#$%^&*"
            .chars()
            .map(|c| format!("x{c}{long}zzz"))
            .collect();
        tools.extend([format!("x-{long}"), format!("x.{long}")]);
        let mut names = ShellNames::default();
        let given: Vec<String> = tools.iter().map(|t| names.name("s", t)).collect();
        assert_eq!(given, first_free_names("s", &tools));
        assert!(given[11].ends_with("y-2"), "{}", given[11]);
    }

    proptest::proptest! {
        /// Whatever the names, each takes the first suffix free from 2, as when every suffix
        /// was tried one by one: names at and near the longest length that clean alike (`-`
        /// and `.`), so that one name's whole is another's cut stem and suffixes reach two
        /// digits.
        #[test]
        fn each_name_takes_the_first_suffix_free(
            tools in proptest::collection::vec(
                proptest::strategy::Strategy::prop_map(
                    ("[.-]", 247usize..250, "z{0,3}"),
                    |(sep, fill, tail)| format!("x{sep}{}{tail}", "y".repeat(fill)),
                ),
                1..200,
            )
        ) {
            let mut names = ShellNames::default();
            let given: Vec<String> = tools.iter().map(|t| names.name("s", t)).collect();
            proptest::prop_assert_eq!(given, first_free_names("s", &tools));
        }
    }

    /// Shell names as each tool takes the first suffix free from 2, tried one by one.
    fn first_free_names(server: &str, tools: &[String]) -> Vec<String> {
        let mut taken = HashSet::new();
        let mut given = Vec::new();
        for tool in tools {
            let plain = shell_name(server, tool);
            let mut name = plain.clone();
            let mut next = 2;
            while !taken.insert(name.clone()) {
                let suffix = format!("-{next}");
                name = format!(
                    "{}{suffix}",
                    &plain[..plain.len().min(MAX_SHELL_NAME_CHARS - suffix.len())]
                );
                next += 1;
            }
            given.push(name);
        }
        given
    }

    #[test]
    fn tools_whose_names_clean_alike_keep_a_name_each() {
        let catalog = Catalog::parse(
            r#"{"servers": [
                {"name": "Weather API", "tools": [{"name": "get.forecast"}, {"name": "get-forecast"}]},
                {"name": "Weather-API", "tools": [{"name": "get forecast"}]}]}"#,
        )
        .unwrap();
        let tools: Vec<(String, String)> = catalog.tools().map(|(id, t)| (id, t.name)).collect();
        let expected = [
            ("Weather API/get.forecast", "Weather-API__get-forecast"),
            ("Weather API/get-forecast", "Weather-API__get-forecast-2"),
            ("Weather-API/get forecast", "Weather-API__get-forecast-3"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect();
        assert_eq!(tools, expected);
    }

    #[test]
    fn a_tool_listed_twice_or_without_a_name_is_an_error_that_says_where() {
        let twice = Catalog::parse(
            r#"{"servers": [{"name": "s", "tools": [{"name": "t"}, {"name": "u"}]},
                            {"name": "s", "tools": [{"name": "t", "description": "again"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            twice.to_string(),
            "/servers/1/tools/0: tool `t` of server `s` is listed twice (first at /servers/0/tools/0)"
        );
        let nameless =
            Catalog::parse(r#"{"servers": [{"name": "s", "tools": [{"name": ""}]}]}"#).unwrap_err();
        assert_eq!(
            nameless.to_string(),
            "/servers/0/tools/0: a tool of server `s` has an empty name"
        );
    }

    /// A schema that names a key twice is refused at its line: read into a value, the second
    /// `properties` replaced the first and the tool lost its parameter `a` without a word.
    #[test]
    fn a_key_written_twice_in_a_schema_is_an_error_at_its_line() {
        let err = Catalog::parse(
            "{\"servers\": [{\"name\": \"s\", \"tools\": [{\"name\": \"t\", \"inputSchema\":\n {\"type\": \"object\", \"properties\": {\"a\": {}}, \"properties\": {\"b\": {}}}}]}]}",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("duplicate key `properties` at line 2 column "),
            "{err}"
        );
    }

    /// Where a catalog is wrong is told in characters, as an editor counts columns: after a
    /// tool's Chinese description, serde_json's byte count was about three times too far.
    #[test]
    fn a_catalog_error_after_chinese_text_is_at_its_character_column() {
        let line = r#"{"servers": [{"name": "s", "tools": [{"name": "t", "description": "读取文件的内容", "#;
        let at = line.chars().count() + 1;
        for (rest, said) in [
            (
                "\"title\": \"A\", \"title\": \"B\"}]}]}",
                "duplicate key `title`",
            ),
            ("x}]}]}", "key must be a string"),
            (
                "\"description\": \"b\"}]}]}",
                "duplicate field `description`",
            ),
        ] {
            let err = Catalog::parse(&format!("{line}{rest}"))
                .unwrap_err()
                .to_string();
            // The repeated key begins 14 characters past the first (`"title": "A", `); serde_json
            // refuses a repeated field at its name's closing quote.
            let column = match said {
                "duplicate key `title`" => at + 14,
                "key must be a string" => at,
                _ => at + "\"description\"".len() - 1,
            };
            assert_eq!(err, format!("{said} at line 1 column {column}"), "{rest}");
        }
    }

    /// A key written twice where nothing reads it (`title`, `annotations`, an extension's) is
    /// refused too, as the JS host refuses it: serde kept the last without a word.
    #[test]
    fn a_key_written_twice_is_an_error_wherever_it_is() {
        for (tool, key) in [
            (r#""title": "A", "title": "B""#, "title"),
            (
                r#""annotations": {"readOnlyHint": true, "readOnlyHint": false}"#,
                "readOnlyHint",
            ),
            (r#""x-vendor": {"a": 1, "a": 2}"#, "a"),
            // A field serde reads is refused by serde, in its words.
            (r#""description": "a", "description": "b""#, "description"),
        ] {
            let text =
                format!(r#"{{"servers": [{{"name": "s", "tools": [{{"name": "t", {tool}}}]}}]}}"#);
            let err = Catalog::parse(&text).unwrap_err().to_string();
            let word = if key == "description" { "field" } else { "key" };
            assert!(
                err.starts_with(&format!("duplicate {word} `{key}` at line 1 column ")),
                "{err}"
            );
        }
        // What serde passes over in a key nobody reads is not judged here either.
        for unread in [
            r#""x-vendor": {"max": 1e400}"#,
            r#""title": "\ud800""#,
            &format!(r#""x-deep": {}{}"#, "[".repeat(200), "]".repeat(200)),
        ] {
            let text = format!(
                r#"{{"servers": [{{"name": "s", "tools": [{{"name": "t", {unread}}}]}}]}}"#
            );
            assert!(Catalog::parse(&text).is_ok(), "{unread}");
        }
        // A repeat spelt with an escape is a repeat; a type error before it is said first.
        let text =
            r#"{"servers": [{"name": "s", "tools": [{"name": "t", "a\u0062": 1, "ab": 2}]}]}"#;
        assert!(
            Catalog::parse(text)
                .unwrap_err()
                .to_string()
                .starts_with("duplicate key `ab`")
        );
        let text =
            r#"{"servers": [{"name": 5, "tools": [{"name": "t", "title": 1, "title": 2}]}]}"#;
        let err = Catalog::parse(text).unwrap_err().to_string();
        assert!(err.starts_with("invalid type: integer `5`"), "{err}");
        // The same key in two objects is no repeat.
        let text = r#"{"servers": [{"name": "s", "tools": [{"name": "t", "title": "a"}, {"name": "u", "title": "a"}]}]}"#;
        assert_eq!(Catalog::parse(text).unwrap().tool_count(), 2);
    }

    /// An editor's byte-order mark before the JSON is no reason to refuse a catalog.
    #[test]
    fn a_catalog_may_start_with_a_byte_order_mark() {
        let catalog = Catalog::parse(
            "\u{feff}{\"servers\": [{\"name\": \"s\", \"tools\": [{\"name\": \"t\"}]}]}",
        )
        .unwrap();
        assert_eq!(catalog.tool_count(), 1);
        // Only at the start: one after a space is a character of the file, named.
        let err = Catalog::parse(" \u{feff}{\"servers\": []}")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("this file starts with `\\u{feff}`"), "{err}");
    }

    /// A tool's search text is bounded at its place, in number and in length.
    #[test]
    fn search_text_past_its_bounds_is_an_error_at_its_place() {
        let with = |text: Value| {
            let catalog = serde_json::json!({"servers": [{"name": "s", "tools": [
                {"name": "t", "x-lazy-tools": text}]}]});
            Catalog::parse(&catalog.to_string()).map(|_| ())
        };
        let many = vec!["k"; MAX_SEARCH_TEXTS + 1];
        assert_eq!(
            with(serde_json::json!({"keywords": many}))
                .unwrap_err()
                .to_string(),
            "/servers/0/tools/0/x-lazy-tools/keywords: 33 texts; a tool's `keywords` holds at \
             most 32"
        );
        let long = "é".repeat(MAX_SEARCH_TEXT_CHARS + 1);
        assert_eq!(
            with(serde_json::json!({"examples": ["ok", long]}))
                .unwrap_err()
                .to_string(),
            "/servers/0/tools/0/x-lazy-tools/examples/1: 501 characters; a text here holds at \
             most 500"
        );
        let full = vec!["é".repeat(MAX_SEARCH_TEXT_CHARS); MAX_SEARCH_TEXTS];
        with(serde_json::json!({"keywords": full, "examples": full, "descriptions": full}))
            .unwrap();
    }

    #[test]
    fn a_misspelt_key_is_an_error_at_its_place_and_another_unread_key_is_counted() {
        let typo = Catalog::parse(
            r#"{"servers": [{"name": "s", "tools": [
                {"name": "t"}, {"name": "u", "descripton": "lost"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            typo.to_string(),
            "/servers/0/tools/1/descripton: unknown key `descripton` in a tool: did you mean \
             `description`? The shell reads `name`, `description`, `inputSchema`, \
             `x-lazy-tools`; an extension's key starts with `x-`"
        );
        for (text, start) in [
            (
                r#"{"servers": [{"name": "s", "tool": [], "tools": []}]}"#,
                "/servers/0/tool: unknown key `tool` in a server: did you mean `tools`?",
            ),
            (
                r#"{"servers": [{"name": "s", "tools": [{"name": "t", "input_schema": {}}]}]}"#,
                "/servers/0/tools/0/input_schema: unknown key `input_schema` in a tool: did you \
                 mean `inputSchema`?",
            ),
        ] {
            let err = Catalog::parse(text).unwrap_err().to_string();
            assert!(err.starts_with(start), "{err}");
        }
        // What a real `tools/list` holds beside what the shell reads, and extensions, load
        // without a word; a source's own fields load, counted.
        let real = Catalog::parse(
            r#"{"source": "tools/list", "x-by": "me", "servers": [{"name": "s", "package": "p",
                "tools": [{"name": "t", "title": "T", "annotations": {"readOnlyHint": true},
                           "outputSchema": {"type": "object"}, "_meta": {}, "x-vendor": 1}]}]}"#,
        )
        .unwrap();
        assert!(real.unread_keys.is_empty(), "{:?}", real.unread_keys);
        let api = Catalog::parse(
            r#"{"servers": [{"name": "s", "url": "https://x", "tools": [
                {"name": "t", "method": "GET"}, {"name": "u", "method": "POST"}]}]}"#,
        )
        .unwrap();
        let unread = |key: &str, entries: usize, first: &str| UnreadKey {
            key: key.into(),
            entries,
            first: first.into(),
        };
        assert_eq!(
            api.unread_keys,
            [
                unread("url", 1, "/servers/0/url"),
                unread("method", 2, "/servers/0/tools/0/method")
            ]
        );
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_or_an_id_that_splits_two_ways_is_an_error() {
        let array = Catalog::parse(
            r#"{"servers": [{"name": "s", "tools": [{"name": "t", "inputSchema": []}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            array.to_string(),
            "/servers/0/tools/0/inputSchema: tool `t` of server `s` takes an array; an MCP \
             tool's inputSchema is a JSON Schema object with \"type\": \"object\""
        );
        let string = Catalog::parse(
            r#"{"servers": [{"name": "s", "tools": [
                {"name": "t", "inputSchema": {"type": "string"}}]}]}"#,
        )
        .unwrap_err();
        assert!(
            string
                .to_string()
                .contains("takes a schema of type \"string\""),
            "{string}"
        );
        // No type, or null (no parameters), is taken.
        let lenient = Catalog::parse(
            r#"{"servers": [{"name": "s", "tools": [
                {"name": "t", "inputSchema": {"properties": {}}}, {"name": "u", "inputSchema": null}]}]}"#,
        )
        .unwrap();
        assert_eq!(lenient.servers[0].tools[1].input_schema, empty_schema());
        let split = Catalog::parse(
            r#"{"servers": [{"name": "a/b", "tools": [{"name": "c"}]},
                            {"name": "a", "tools": [{"name": "b/c"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            split.to_string(),
            "/servers/1/tools/0: tool `b/c` of server `a` and tool `c` of server `a/b` (at \
             /servers/0/tools/0) have one id, `a/b/c`: a server or tool name holding `/` makes \
             `server/tool` split two ways"
        );
        // A `/` alone is no conflict: catalogs made from API directories name servers so.
        assert!(
            Catalog::parse(
                r#"{"servers": [{"name": "api.example.com/v2", "tools": [{"name": "get/item"}]}]}"#
            )
            .is_ok()
        );
        let empty = Catalog::parse(r#"{"servers": [{"name": "", "tools": []}]}"#).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "/servers/0/name: a server has an empty name"
        );
    }

    #[test]
    fn a_catalog_of_more_tools_than_a_plugin_holds_is_refused_saying_so() {
        let tools = |n: usize| {
            let tools: Vec<String> = (0..n).map(|t| format!(r#"{{"name": "t{t}"}}"#)).collect();
            format!(
                r#"{{"servers": [{{"name": "s", "tools": [{}]}}]}}"#,
                tools.join(",")
            )
        };
        assert!(Catalog::parse(&tools(MAX_CATALOG_TOOLS)).is_ok());
        let err = Catalog::parse(&tools(MAX_CATALOG_TOOLS + 1))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/servers: 50001 tools; a catalog here holds at most 50000"),
            "{err}"
        );
    }

    #[test]
    fn a_server_whose_tools_begin_as_another_servers_is_an_error() {
        for (names, message) in [
            (
                ["a", "a__b"],
                "/servers/1/name: server `a__b` names its tools `a__b__<tool>`, which begin as \
                 server `a`'s (/servers/0) do: a pattern such as `Defer(a__*)` would reach both",
            ),
            (
                ["a_", "a"],
                "/servers/0/name: server `a_` names its tools `a___<tool>`, which begin as \
                 server `a`'s (/servers/1) do: a pattern such as `Defer(a__*)` would reach both",
            ),
        ] {
            let text = format!(
                r#"{{"servers": [{{"name": "{}", "tools": []}}, {{"name": "{}", "tools": []}}]}}"#,
                names[0], names[1]
            );
            assert_eq!(Catalog::parse(&text).unwrap_err().to_string(), message);
        }
        // Alone, such a name reaches no other server's tools; names that clean alike share.
        for names in [["a__b", "c"], ["_a", "a"], ["Weather API", "Weather-API"]] {
            let text = format!(
                r#"{{"servers": [{{"name": "{}", "tools": []}}, {{"name": "{}", "tools": []}}]}}"#,
                names[0], names[1]
            );
            assert!(Catalog::parse(&text).is_ok(), "{names:?}");
        }
    }

    #[test]
    fn a_catalog_that_is_not_a_json_object_says_what_a_catalog_is() {
        for (text, start) in [
            ("[]", "`[`"),
            ("  [[{\"name\": \"s\"}]]", "`[`"),
            ("", "nothing"),
        ] {
            let err = Catalog::parse(text).unwrap_err().to_string();
            assert!(
                err.starts_with("a catalog is a JSON object, `{\"servers\": [")
                    && err.ends_with(&format!("this file starts with {start}")),
                "{err}"
            );
        }
    }

    /// Keys of a tool, and the read key each is a misspelling of. The JS host's suite holds the
    /// same table (`hosts/js/test/shell.test.js`), so both shells refuse the same keys.
    const TOOL_KEY_TYPOS: &[(&str, Option<&str>)] = &[
        ("descripton", Some("description")),
        ("dscription", Some("description")),
        ("discription", Some("description")),
        ("descriptions", Some("description")),
        ("Description", Some("description")),
        ("input_schema", Some("inputSchema")),
        ("inputshema", Some("inputSchema")),
        ("inputSchemas", Some("inputSchema")),
        ("nmae", Some("name")),
        ("naem", Some("name")),
        ("nam", Some("name")),
        ("names", Some("name")),
        ("lazy-tools", Some("x-lazy-tools")),
        ("x_lazy_tools", Some("x-lazy-tools")),
        ("namespace", None),
        ("description_zh", None),
        ("descr", None),
        ("input", None),
        ("schema", None),
        ("method", None),
        ("url", None),
        ("params", None),
        ("category", None),
        // Separators past a few make no slip of the keyboard (and are not quoted back whole).
        ("d_e_s_c_r_i_p_t_o_n", None),
        ("-_-_-_name", None),
        ("input__schema", Some("inputSchema")),
    ];

    #[test]
    fn a_key_is_a_misspelling_one_edit_away_not_when_it_only_begins_alike() {
        for &(key, near) in TOOL_KEY_TYPOS {
            let text = format!(
                r#"{{"servers": [{{"name": "s", "tools": [{{"name": "t", "{key}": 1}}]}}]}}"#
            );
            match (Catalog::parse(&text), near) {
                (Ok(catalog), None) => assert_eq!(catalog.unread_keys[0].key, key),
                (Err(err), Some(near)) => assert!(
                    err.to_string().contains(&format!(
                        "unknown key `{key}` in a tool: did you mean `{near}`?"
                    )),
                    "{err}"
                ),
                (result, near) => panic!("{key}: {result:?}, expected a typo of {near:?}"),
            }
        }
    }

    #[test]
    fn a_server_or_tool_written_as_an_array_is_an_error_at_its_line() {
        // serde would read each by position: a server `fs` with one tool `read`.
        for (text, line) in [
            (
                "{\"servers\": [\n  [\"fs\", \"\", null, [{\"name\": \"read\"}]]\n]}",
                2,
            ),
            (
                "{\"servers\": [{\"name\": \"fs\", \"tools\": [\n  [\"read\", \"Reads.\"]\n]}]}",
                2,
            ),
            (
                "{\"servers\": [{\"name\": \"fs\", \"tools\": [{\"name\": \"read\",\n  \
                 \"x-lazy-tools\": [[\"file\"]]}]}]}",
                2,
            ),
        ] {
            let err = Catalog::parse(text).unwrap_err().to_string();
            assert!(
                err.contains("invalid type: sequence, expected a JSON object with named keys")
                    && err.contains(&format!("line {line} column")),
                "{err}"
            );
        }
        // Written as objects, the same entries load.
        let catalog = Catalog::parse(
            "{\"servers\": [{\"name\": \"fs\", \"tools\": [{\"name\": \"read\", \
             \"x-lazy-tools\": {\"keywords\": [\"file\"]}}, {\"name\": \"list\", \
             \"x-lazy-tools\": null}]}]}",
        )
        .unwrap();
        let tools = &catalog.servers[0].tools;
        assert_eq!(tools[0].search_text.as_ref().unwrap().keywords, ["file"]);
        assert_eq!(tools[1].search_text, None);
    }

    #[test]
    fn parses_the_shared_format() {
        let catalog = Catalog::parse(
            r#"{"servers": [{"name": "s", "description": "d", "tools": [
                {"name": "t", "description": "x", "inputSchema": {"type": "object"}},
                {"name": "u"}]}]}"#,
        )
        .unwrap();
        let tools: Vec<_> = catalog.tools().collect();
        assert_eq!(tools[0].0, "s/t");
        assert_eq!(tools[1].1.name, "s__u");
        assert_eq!(tools[1].1.origin, Origin::Mcp("s".into()));
    }
}
