//! The rows of a profile's files, read from located YAML: every problem is
//! reported at its line and column, all of them at once, and an unknown key
//! gets a "did you mean".

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Problem;
use crate::home::check_name;
use crate::yaml::{LocatedValue, Place};
use lazy_tools::suggest::did_you_mean;

/// A plugin row: a row of `cordis.yml`, or one that a patch layer inserts.
#[derive(Debug, Clone)]
pub struct PluginRow {
    pub id: String,
    /// The cargo package that builds the component.
    pub name: String,
    /// Where `plugin add` got it: `git:<url>[#<rev>]` or `link:<path>`.
    pub source: Option<String>,
    /// The commit it was built from.
    pub revision: Option<String>,
    /// sha256 of the component, hex.
    pub sha256: Option<String>,
    /// The component's path as written; a relative one is relative to the
    /// folder of the file the row is in.
    pub component: Option<String>,
    /// The plugin's config node, with the places of the file it is in.
    pub config: Option<LocatedValue>,
    /// Where the row is written.
    pub place: Place,
    /// Where `component` is written (the row, when it is not).
    pub component_place: Place,
}

impl PluginRow {
    /// The component's path, resolved against the folder of the row's file.
    pub fn component_path(&self) -> Option<PathBuf> {
        let component = Path::new(self.component.as_deref()?);
        let base = self.place.file.parent().unwrap_or(Path::new(""));
        Some(base.join(component))
    }

    /// The config the plugin receives: JSON `null` when there is none.
    pub fn config_value(&self) -> Value {
        self.config
            .as_ref()
            .map(|c| c.value.clone())
            .unwrap_or(Value::Null)
    }
}

/// Longest package name accepted (crates.io's limit).
pub const MAX_PACKAGE_NAME_LEN: usize = 64;

/// Checks that `name` is a cargo package name as cargo defines them: a
/// Unicode identifier that may also contain `-`, not starting with a digit,
/// so it can never be read as an option or a path.
pub fn check_package_name(name: &str) -> Result<(), String> {
    let shown = crate::terminal::escape(name);
    if name.len() > MAX_PACKAGE_NAME_LEN {
        return Err(format!(
            "`name` is {} bytes long; a cargo package name has at most {MAX_PACKAGE_NAME_LEN}",
            name.len()
        ));
    }
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err("`name` is empty".into());
    };
    if first.is_ascii_digit() {
        return Err(format!(
            "`{shown}` is not a cargo package name: it cannot start with a digit"
        ));
    }
    if !(unicode_ident::is_xid_start(first) || first == '_') {
        return Err(format!(
            "`{shown}` is not a cargo package name: it must start with a letter or `_`"
        ));
    }
    if let Some(bad) = chars.find(|&c| !(unicode_ident::is_xid_continue(c) || c == '-')) {
        return Err(format!(
            "`{shown}` is not a cargo package name: `{}` is not allowed (use letters, digits, `-` and `_`)",
            crate::terminal::escape(bad.encode_utf8(&mut [0; 4]))
        ));
    }
    Ok(())
}

/// A patch row that changes a plugin by id.
#[derive(Debug, Clone)]
pub struct ChangeRow {
    pub id: String,
    /// Replaces the plugin's config when present (even when `null`).
    pub config: Option<LocatedValue>,
    pub disabled: Option<bool>,
    pub place: Place,
}

/// A patch layer: the user's `cordis.patch.yml`, or a bundle's manifest.
#[derive(Debug, Clone, Default)]
pub struct PatchLayer {
    pub inserts: Vec<PluginRow>,
    pub changes: Vec<ChangeRow>,
}

/// Which file a set of rows comes from; each allows its own keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// `cordis.yml`: the installed plugins, as `plugin add` records them.
    Installed,
    /// The user's `cordis.patch.yml`.
    UserPatch,
    /// A plugin bundle's `cordis.patch.yml`: it may only insert plugins,
    /// which `plugin add` then builds.
    Bundle,
}

impl Layer {
    /// The keys a plugin row may have in this layer, and the required ones.
    fn plugin_keys(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Layer::Installed => (
                &[
                    "id",
                    "name",
                    "source",
                    "revision",
                    "sha256",
                    "component",
                    "config",
                ],
                &["id", "name", "component"],
            ),
            Layer::UserPatch => (
                &["id", "name", "component", "sha256", "config"],
                &["id", "name", "component"],
            ),
            Layer::Bundle => (&["id", "name", "config"], &["id", "name"]),
        }
    }
}

const CHANGE_KEYS: &[&str] = &["id", "config", "disabled"];

/// The rows of `cordis.yml`.
pub fn installed_rows(doc: &LocatedValue, problems: &mut Vec<Problem>) -> Vec<PluginRow> {
    list(doc, "", "a list of plugin rows (`- id: ...`)", problems)
        .into_iter()
        .filter_map(|pointer| plugin_row(doc, &pointer, Layer::Installed, problems))
        .collect()
}

/// The rows of a patch layer.
pub fn patch_rows(doc: &LocatedValue, layer: Layer, problems: &mut Vec<Problem>) -> PatchLayer {
    let mut patch = PatchLayer::default();
    let expected = match layer {
        Layer::Bundle => "a list of `- insert: [...]` rows",
        _ => "a list of patch rows (`- id: ...` or `- insert: [...]`)",
    };
    for pointer in list(doc, "", expected, problems) {
        let Some(map) = mapping(doc, &pointer, "a patch row", problems) else {
            continue;
        };
        let place = doc.place(&pointer);
        match (map.contains_key("insert"), map.contains_key("id")) {
            (true, true) => problems.push(Problem::new(
                place,
                "a patch row either inserts plugins (`insert`) or changes one by `id`, not both",
            )),
            (true, false) => {
                unknown_keys(doc, &pointer, map, &["insert"], problems);
                let at = format!("{pointer}/insert");
                for item in list(doc, &at, "a list of plugin rows (`- id: ...`)", problems) {
                    patch
                        .inserts
                        .extend(plugin_row(doc, &item, layer, problems));
                }
            }
            (false, _) if layer == Layer::Bundle => problems.push(Problem::new(
                place,
                "a bundle's manifest may only insert plugins: `- insert: [{id, name}]`",
            )),
            (false, true) => patch
                .changes
                .extend(change_row(doc, &pointer, map, problems)),
            (false, false) => {
                unknown_keys(doc, &pointer, map, CHANGE_KEYS, problems);
                problems.push(Problem::new(
                    place,
                    "a patch row needs `id` (to change a plugin) or `insert` (to add plugins)",
                ));
            }
        }
    }
    patch
}

fn plugin_row(
    doc: &LocatedValue,
    pointer: &str,
    layer: Layer,
    problems: &mut Vec<Problem>,
) -> Option<PluginRow> {
    let map = mapping(doc, pointer, "a plugin row (`id: ...`)", problems)?;
    let (allowed, required) = layer.plugin_keys();
    unknown_keys(doc, pointer, map, allowed, problems);
    let before = problems.len();
    for key in required {
        if !map.contains_key(*key) {
            problems.push(Problem::new(
                doc.place(pointer),
                format!("the plugin row has no `{key}`"),
            ));
        }
    }
    let fields = Fields { doc, pointer, map };
    let id = fields.string("id", problems);
    if let Some(id) = &id
        && let Err(e) = check_name("plugin id", id)
    {
        problems.push(Problem::new(fields.place("id"), e.to_string()));
    }
    let name = fields.string("name", problems);
    // `name` reaches cargo's command line (`-p <name>`).
    if let Some(name) = &name
        && let Err(e) = check_package_name(name)
    {
        problems.push(Problem::new(fields.place("name"), e));
    }
    let sha256 = fields.string("sha256", problems);
    if let Some(sha256) = &sha256
        && !(sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    {
        problems.push(Problem::new(
            fields.place("sha256"),
            "expected a sha256: 64 lowercase hex digits",
        ));
    }
    let row = PluginRow {
        id: id.unwrap_or_default(),
        name: name.unwrap_or_default(),
        source: fields.string("source", problems),
        revision: fields.string("revision", problems),
        sha256,
        component: fields.string("component", problems),
        config: fields.located("config"),
        place: doc.place(pointer),
        component_place: fields.place("component"),
    };
    (problems.len() == before).then_some(row)
}

fn change_row(
    doc: &LocatedValue,
    pointer: &str,
    map: &Map<String, Value>,
    problems: &mut Vec<Problem>,
) -> Option<ChangeRow> {
    unknown_keys(doc, pointer, map, CHANGE_KEYS, problems);
    let before = problems.len();
    let fields = Fields { doc, pointer, map };
    let id = fields.string("id", problems);
    let disabled = fields.bool("disabled", problems);
    let row = ChangeRow {
        id: id.unwrap_or_default(),
        config: fields.located("config"),
        disabled,
        place: doc.place(pointer),
    };
    (problems.len() == before).then_some(row)
}

/// The pointers of the items of the list at `pointer`; an empty document
/// (or a key with no value) is an empty list.
fn list(
    doc: &LocatedValue,
    pointer: &str,
    expected: &str,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
    match doc.value.pointer(pointer) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => (0..items.len()).map(|i| format!("{pointer}/{i}")).collect(),
        Some(other) => {
            problems.push(Problem::new(
                doc.place(pointer),
                format!("expected {expected}, found {}", kind(other)),
            ));
            Vec::new()
        }
    }
}

fn mapping<'d>(
    doc: &'d LocatedValue,
    pointer: &str,
    expected: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'d Map<String, Value>> {
    match doc.value.pointer(pointer) {
        Some(Value::Object(map)) => Some(map),
        other => {
            problems.push(Problem::new(
                doc.place(pointer),
                format!(
                    "expected {expected}, found {}",
                    other.map(kind).unwrap_or("nothing")
                ),
            ));
            None
        }
    }
}

fn unknown_keys(
    doc: &LocatedValue,
    pointer: &str,
    map: &Map<String, Value>,
    allowed: &[&str],
    problems: &mut Vec<Problem>,
) {
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            let hint = match did_you_mean(key, allowed.iter().copied()) {
                hint if !hint.is_empty() => hint,
                _ => format!("; expected one of: {}", allowed.join(", ")),
            };
            problems.push(Problem::new(
                doc.place(&child(pointer, key)),
                format!("unknown key `{key}`{hint}"),
            ));
        }
    }
}

/// The fields of one mapping.
struct Fields<'a> {
    doc: &'a LocatedValue,
    pointer: &'a str,
    map: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn place(&self, key: &str) -> Place {
        self.doc.place(&child(self.pointer, key))
    }

    fn string(&self, key: &str, problems: &mut Vec<Problem>) -> Option<String> {
        match self.map.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::String(_) => {
                problems.push(Problem::new(self.place(key), format!("`{key}` is empty")));
                None
            }
            other => {
                // YAML reads `1234` or `true` as a number or a boolean.
                let hint = match other {
                    Value::Number(_) | Value::Bool(_) => "; put it in quotes",
                    _ => "",
                };
                problems.push(Problem::new(
                    self.place(key),
                    format!("expected a string for `{key}`, found {}{hint}", kind(other)),
                ));
                None
            }
        }
    }

    fn bool(&self, key: &str, problems: &mut Vec<Problem>) -> Option<bool> {
        match self.map.get(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                problems.push(Problem::new(
                    self.place(key),
                    format!("expected true or false for `{key}`, found {}", kind(other)),
                ));
                None
            }
        }
    }

    fn located(&self, key: &str) -> Option<LocatedValue> {
        self.doc.at(&child(self.pointer, key))
    }
}

fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// How a YAML value's type is named in errors.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
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

    fn parse(text: &str) -> LocatedValue {
        LocatedValue::parse(Path::new("p/cordis.yml"), text).unwrap()
    }

    fn messages(problems: &[Problem]) -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn installed_rows_keep_their_places() {
        let doc = parse(
            "- id: lazy-tools\n  name: lazy-tools\n  component: c.wasm\n  config:\n    defer: [x]\n",
        );
        let mut problems = Vec::new();
        let rows = installed_rows(&doc, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(rows[0].id, "lazy-tools");
        assert_eq!(rows[0].component_path().unwrap(), Path::new("p/c.wasm"));
        assert_eq!(rows[0].component_place.to_string(), "p/cordis.yml:3:3");
        let config = rows[0].config.as_ref().unwrap();
        assert_eq!(config.place("/defer/0").to_string(), "p/cordis.yml:5:13");
    }

    #[test]
    fn every_problem_is_reported_at_its_place() {
        let doc = parse("- id: 3\n  nmae: x\n  component: c.wasm\n- just a string\n");
        let mut problems = Vec::new();
        assert!(installed_rows(&doc, &mut problems).is_empty());
        assert_eq!(
            messages(&problems),
            [
                "p/cordis.yml:2:3: unknown key `nmae`; did you mean `name`?",
                "p/cordis.yml:1:3: the plugin row has no `name`",
                "p/cordis.yml:1:3: expected a string for `id`, found a number; put it in quotes",
                "p/cordis.yml:4:3: expected a plugin row (`id: ...`), found a string",
            ]
        );
    }

    #[test]
    fn patch_rows_insert_or_change() {
        let doc = parse(
            "- id: a\n  disabled: true\n- insert:\n    - {id: b, name: b, component: b.wasm}\n- id: c\n  config: null\n",
        );
        let mut problems = Vec::new();
        let patch = patch_rows(&doc, Layer::UserPatch, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(patch.inserts[0].id, "b");
        assert_eq!(patch.changes[0].disabled, Some(true));
        assert!(patch.changes[0].config.is_none());
        // `config: null` is a config: the plugin's defaults.
        assert_eq!(patch.changes[1].config.as_ref().unwrap().value, Value::Null);
    }

    #[test]
    fn bundles_only_insert() {
        let doc = parse("- id: a\n  config: {}\n- insert:\n    - {id: b, name: b, component: x}\n");
        let mut problems = Vec::new();
        patch_rows(&doc, Layer::Bundle, &mut problems);
        assert_eq!(
            messages(&problems),
            [
                "p/cordis.yml:1:3: a bundle's manifest may only insert plugins: `- insert: [{id, name}]`",
                "p/cordis.yml:4:24: unknown key `component`; expected one of: id, name, config",
            ]
        );
    }

    #[test]
    fn package_names_are_cargos() {
        for good in ["lazy-tools", "lazy_tools", "_x", "a1", "é"] {
            assert_eq!(check_package_name(good), Ok(()), "{good}");
        }
        for (bad, message) in [
            (
                "--config=build.rustc-wrapper='/bin/sh'",
                "must start with a letter",
            ),
            ("-q", "must start with a letter"),
            ("1x", "cannot start with a digit"),
            ("a/../b", "`/` is not allowed"),
            ("a b", "` ` is not allowed"),
            ("a\u{1b}[2J", "`\\u{1b}` is not allowed"),
            ("", "is empty"),
        ] {
            let err = check_package_name(bad).unwrap_err();
            assert!(err.contains(message), "{bad:?}: {err}");
        }
        assert!(check_package_name(&"a".repeat(65)).is_err());
        // In a manifest, the problem is at the `name`.
        let doc = parse("- insert:\n    - {id: x, name: \"--config=x\"}\n");
        let mut problems = Vec::new();
        let patch = patch_rows(&doc, Layer::Bundle, &mut problems);
        assert!(patch.inserts.is_empty());
        assert_eq!(
            messages(&problems),
            [
                "p/cordis.yml:2:15: `--config=x` is not a cargo package name: it must start with a letter or `_`"
            ]
        );
    }

    #[test]
    fn an_empty_file_has_no_rows() {
        let mut problems = Vec::new();
        assert!(installed_rows(&parse("# nothing yet\n"), &mut problems).is_empty());
        let patch = patch_rows(&parse(""), Layer::UserPatch, &mut problems);
        assert!(patch.inserts.is_empty() && patch.changes.is_empty() && problems.is_empty());
    }
}
