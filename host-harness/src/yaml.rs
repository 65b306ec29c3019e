//! YAML documents with the location of every node, so that an error found
//! later (by the plugin, in JSON terms) can be shown at the user's line.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::Spanned;

use crate::terminal::escape;

/// The largest YAML file read (a profile, a bundle's manifest, a config
/// node): real ones are a few KiB; more is a mistake, or an attack on the
/// shell's memory.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// A place in a YAML file (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
}

impl Place {
    /// The file as a whole (a file that cannot be read): shown without a line.
    pub fn whole(file: &Path) -> Self {
        Self {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display().to_string();
        if self.line == 0 {
            return write!(f, "{}", escape(&file));
        }
        write!(f, "{}:{}:{}", escape(&file), self.line, self.column)
    }
}

/// A YAML error, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct YamlError {
    pub place: Place,
    pub message: String,
}

/// A YAML document as JSON, with each node's place by JSON pointer.
#[derive(Debug, Clone)]
pub struct LocatedValue {
    pub value: Value,
    places: BTreeMap<String, (u64, u64)>,
    file: PathBuf,
}

/// How every YAML file the harness reads is parsed (profiles, steps files): booleans are
/// YAML 1.2's (`true`, `false`), since with YAML 1.1's a tool named `y`, `no` or `on` in a
/// list, or `args: {path: no}`, would silently become a boolean.
pub fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { strict_booleans: true }
}

impl LocatedValue {
    /// Parses `text`, read from `file` (used in messages only), with [`options`].
    pub fn parse(file: &Path, text: &str) -> Result<Self, YamlError> {
        let root: Spanned<Node> =
            serde_saphyr::from_str_with_options(text, options()).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((1, 1));
                YamlError {
                    place: Place {
                        file: file.to_path_buf(),
                        line,
                        column,
                    },
                    message: first_line(&e.to_string()),
                }
            })?;
        let mut places = BTreeMap::new();
        let value = root_into_json(root, String::new(), &mut places);
        Ok(Self {
            value,
            places,
            file: file.to_path_buf(),
        })
    }

    pub fn load(file: &Path) -> anyhow::Result<Self> {
        let text = read_bounded(file)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", escape(&file.display().to_string())))?;
        Ok(Self::parse(file, &text)?)
    }

    /// Where the node at `pointer` was written: a mapping entry at its key,
    /// a list item at the item. A pointer that does not exist falls back to
    /// its nearest ancestor.
    pub fn place(&self, pointer: &str) -> Place {
        let mut at = pointer;
        loop {
            if let Some(&(line, column)) = self.places.get(at) {
                return Place {
                    file: self.file.clone(),
                    line,
                    column,
                };
            }
            match at.rfind('/') {
                Some(i) => at = &at[..i],
                None => {
                    return Place {
                        file: self.file.clone(),
                        line: 1,
                        column: 1,
                    };
                }
            }
        }
    }

    /// A sub-document, keeping the places of its nodes.
    pub fn at(&self, pointer: &str) -> Option<LocatedValue> {
        let value = self.value.pointer(pointer)?.clone();
        let places = self
            .places
            .range(pointer.to_string()..)
            .take_while(|(k, _)| k.starts_with(pointer))
            .filter(|(k, _)| k.len() == pointer.len() || k[pointer.len()..].starts_with('/'))
            .map(|(k, v)| (k[pointer.len()..].to_string(), *v))
            .collect();
        Some(Self {
            value,
            places,
            file: self.file.clone(),
        })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }
}

/// The text of the file at `path`, refused when it is larger than
/// [`MAX_FILE_BYTES`] (without reading more than that).
pub fn read_bounded(path: &Path) -> std::io::Result<String> {
    crate::bounded::read_text(path, MAX_FILE_BYTES, "a YAML file here")
}

/// The parser's message without the location it repeats and without advice
/// meant for programmers.
pub(crate) fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message).trim();
    // serde-saphyr's limits, said as the limits of a file here.
    if line.contains("budget breached: Nodes") {
        return "the document has more YAML nodes than a file here may have".into();
    }
    if line.contains("budget breached: Depth") {
        return "the document is nested deeper than a file here may be".into();
    }
    if line.contains("budget breached: ScalarBytes") {
        return "the document's text, with its aliases expanded, is longer than a file here may \
                hold"
            .into();
    }
    if let Some((_, breach)) = line.split_once("budget breached: ") {
        // Another of the parser's limits, named as its `Debug` names it (with figures after).
        let limit = breach.split([' ', '{']).next().unwrap_or(breach);
        let what = match limit {
            // Not a limit: the parser's word for a sequence that does not close.
            "SequenceUnbalanced" => return "a sequence that is never closed".into(),
            "Events" => "YAML events",
            "Aliases" => "aliases",
            "Anchors" => "anchors",
            "Documents" => "documents",
            "CommentBytes" => "comment text",
            "MergeKeys" => "merge keys",
            "AliasAnchorRatio" => "aliases for each anchor",
            "InputBytes" => "bytes",
            "InclusionDepth" => "nested inclusions",
            _ => "what one file may hold",
        };
        return format!("the document goes past the parser's limit on {what} for a file here");
    }
    if line.contains("multiple YAML documents detected") {
        return "the file holds several YAML documents; a file here holds one".into();
    }
    if line.contains("cannot deserialize null into string") {
        return "`null` (or `~`, or nothing) where text is expected; quote it to mean the word"
            .into();
    }
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let line = match line
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((place, rest)) if place.contains(" column ") => rest,
        _ => line,
    };
    // Advice for the program's author, not for the file's.
    let line = line
        .split(", set DuplicateKeyPolicy")
        .next()
        .and_then(|l| l.split("; use Option<").next())
        .unwrap_or(line);
    escape(line).into_owned()
}

/// A mapping key in the duplicate check; tests count its comparisons, which
/// is the work the check does.
struct Key(String);

// By hand, like `eq`, so that equal keys hash alike (clippy's
// derived_hash_with_manual_eq).
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        #[cfg(test)]
        tests::KEY_COMPARISONS.with(|n| n.set(n.get() + 1));
        self.0 == other.0
    }
}

impl Eq for Key {}

/// A YAML node whose children carry their places.
enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

fn root_into_json(
    node: Spanned<Node>,
    pointer: String,
    places: &mut BTreeMap<String, (u64, u64)>,
) -> Value {
    places.insert(
        pointer.clone(),
        (node.referenced.line(), node.referenced.column()),
    );
    match node.value {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Number(n) => Value::Number(n),
        Node::String(s) => Value::String(s),
        Node::Seq(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| root_into_json(item, format!("{pointer}/{i}"), places))
                .collect(),
        ),
        Node::Map(entries) => {
            let mut map = Map::new();
            for (key, item) in entries {
                let escaped = key.value.replace('~', "~0").replace('/', "~1");
                let at = format!("{pointer}/{escaped}");
                let value = root_into_json(item, at.clone(), places);
                places.insert(at, (key.referenced.line(), key.referenced.column()));
                map.insert(key.value, value);
            }
            Value::Object(map)
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        crate::strict_json::number_from_f64(v)
            .map(Node::Number)
            .map_err(E::custom)
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(Spanned<String>, Spanned<Node>)> = Vec::new();
        // Keys that YAML tells apart (`1` and `'1'`) are one JSON key: a set,
        // so a mapping of n keys costs n lookups, not n² comparisons.
        let mut seen: HashSet<Key> = HashSet::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            if !seen.insert(Key(key.value.clone())) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}`",
                    escape(&key.value)
                )));
            }
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        pub(super) static KEY_COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A mapping of `keys` keys, each with a short value (124,000 keys is
    /// about 2.6 MB; serde-saphyr's node budget allows 250,000 nodes).
    fn large_mapping(keys: usize) -> String {
        let mut text = String::with_capacity(keys * 20);
        for i in 0..keys {
            text.push_str(&format!("tool_{i:06}: allowed\n"));
        }
        text
    }

    #[test]
    fn a_large_mapping_reads_in_linear_work() {
        let keys = 124_000;
        let text = large_mapping(keys);
        assert!(text.len() > 2_000_000);
        KEY_COMPARISONS.with(|n| n.set(0));
        let doc = LocatedValue::parse(Path::new("big.yml"), &text).unwrap();
        let compared = KEY_COMPARISONS.with(|n| n.get());
        assert_eq!(doc.value.as_object().unwrap().len(), keys);
        assert_eq!(doc.place("/tool_123999").line, 124_000);
        // A comparison per key at most (hash collisions), not one per pair.
        assert!(compared <= keys as u64, "{compared} key comparisons");

        // A duplicate at the very end is still found, at its line.
        let text = format!("{text}tool_000000: denied\n");
        let err = LocatedValue::parse(Path::new("big.yml"), &text).unwrap_err();
        assert_eq!(err.place.line, 124_001, "{err}");
        assert!(err.message.contains("duplicate"), "{err}");
    }

    /// A column counts characters, as the JS host's reader counts them: an emoji is one (it
    /// is two UTF-16 units and four bytes), a Chinese character one (three bytes).
    #[test]
    fn a_column_counts_characters() {
        for (text, column) in [
            ("😀: *nope\n", 4),
            ("描述: *nope\n", 5),
            // A byte-order mark (an editor's) is no column.
            ("\u{feff}a: *nope\n", 4),
            ("a:\n  😀😀: [x, *nope]\n", 11),
        ] {
            let err = LocatedValue::parse(Path::new("p.yml"), text).unwrap_err();
            assert_eq!(err.place.column, column, "{text}: {err}");
        }
    }

    #[test]
    fn files_are_read_up_to_a_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.yml");
        std::fs::write(&path, " ".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
        let err = LocatedValue::load(&path).unwrap_err().to_string();
        assert!(err.contains("larger than 8 MiB"), "{err}");
        std::fs::write(&path, "a: 1\n").unwrap();
        assert_eq!(
            LocatedValue::load(&path).unwrap().value,
            serde_json::json!({"a": 1})
        );
    }

    #[test]
    fn an_integer_beyond_64_bits_is_an_error_at_its_place() {
        let err = LocatedValue::parse(Path::new("n.yml"), "a: 1\nn: 12345678901234567890123\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("n.yml:2:"), "{err}");
        assert!(err.contains("is past the 64-bit integers"), "{err}");
        // Below i64::MIN too (it was read rounded: -2^64 was the end checked).
        for n in ["-9223372036854775809", "-9999999999999999999"] {
            let err = LocatedValue::parse(Path::new("n.yml"), &format!("a: 1\nn: {n}\n"))
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("n.yml:2:"), "{n}: {err}");
        }
        let doc = LocatedValue::parse(
            Path::new("n.yml"),
            "u: 18446744073709551615\ni: -9223372036854775808\nf: 1.5e3\n",
        )
        .unwrap();
        assert_eq!(doc.value["u"], serde_json::json!(u64::MAX));
        assert_eq!(doc.value["i"], serde_json::json!(i64::MIN));
        assert_eq!(doc.value["f"], serde_json::json!(1500.0));
    }

    #[test]
    fn messages_show_control_characters_escaped() {
        // A key holding an escape sequence (YAML's `\e`), given twice.
        let err = LocatedValue::parse(Path::new("e\u{1b}.yml"), "\"k\\e[2J\": 1\n\"k\\e[2J\": 2\n")
            .unwrap_err()
            .to_string();
        assert!(!err.contains('\u{1b}'), "{err:?}");
        assert!(err.contains("k\\u{1b}[2J"), "{err}");
        assert!(err.starts_with("e\\u{1b}.yml:2:"), "{err}");
        // A raw one, which YAML refuses: the refusal quotes it escaped.
        let err = LocatedValue::parse(Path::new("r.yml"), "k: \"\u{1b}]0;x\u{7}\"\n").map(|_| ());
        if let Err(err) = err {
            assert!(!err.to_string().chars().any(char::is_control), "{err:?}");
        }
    }

    #[test]
    fn every_limit_of_the_parser_is_said_in_words() {
        for (breach, said) in [
            ("Aliases { aliases: 70000 }", "limit on aliases"),
            (
                "AliasAnchorRatio { aliases: 9, anchors: 1 }",
                "aliases for each anchor",
            ),
            ("SomethingNew { x: 1 }", "limit on what one file may hold"),
            ("SequenceUnbalanced", "a sequence that is never closed"),
        ] {
            let line = first_line(&format!(
                "error: line 3 column 1: budget breached: {breach}"
            ));
            assert!(line.contains(said), "{breach}: {line}");
            assert!(!line.contains('{') && !line.contains(breach.split(' ').next().unwrap()));
        }
    }

    #[test]
    fn the_parsers_limits_and_types_are_said_in_the_files_terms() {
        let message = |text: &str| {
            LocatedValue::parse(Path::new("m.yml"), text)
                .unwrap_err()
                .to_string()
        };
        // A key YAML reads as null: where, and what to write instead.
        let err = message("- {id: a, null: x}\n");
        assert!(err.starts_with("m.yml:1:"), "{err}");
        assert!(err.contains("`null`") && err.contains("quote it"), "{err}");
        assert!(!err.contains("Option<"), "{err}");
        // A megabyte of text aliased a hundred times: no parser internals.
        let big = "x".repeat(1 << 20);
        let aliases = vec!["*a"; 100].join(", ");
        let err = message(&format!("k: &a {big}\nl: [{aliases}]\n"));
        assert!(err.contains("longer than a file here may hold"), "{err}");
        assert!(!err.contains('{') && !err.contains("ScalarBytes"), "{err}");
    }

    #[test]
    fn every_node_has_its_place() {
        let text = "defer:\n  - bash\n  - 'Defer()'\nnoDefer: []\n";
        let doc = LocatedValue::parse(Path::new("p.yml"), text).unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"defer": ["bash", "Defer()"], "noDefer": []})
        );
        let place = doc.place("/defer/1");
        assert_eq!((place.line, place.column), (3, 5));
        assert_eq!(
            (doc.place("/noDefer").line, doc.place("/noDefer").column),
            (4, 1)
        );
        assert_eq!(doc.place("/defer/9").line, doc.place("/defer").line);
        assert_eq!(doc.place("/defer/1").to_string(), "p.yml:3:5");
    }

    #[test]
    fn only_yaml_1_2_booleans_are_booleans() {
        let doc = LocatedValue::parse(Path::new("p.yml"), "a: [y, no, on, true, False]\n").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": ["y", "no", "on", true, false]})
        );
    }

    #[test]
    fn sub_documents_keep_places() {
        let text = "plugins:\n  - id: x\n    config:\n      defer: [a, b]\n";
        let doc = LocatedValue::parse(Path::new("c.yml"), text).unwrap();
        let config = doc.at("/plugins/0/config").unwrap();
        assert_eq!(config.value, serde_json::json!({"defer": ["a", "b"]}));
        assert_eq!(config.place("/defer/1").line, 4);
    }

    #[test]
    fn syntax_errors_are_located() {
        let err = LocatedValue::parse(Path::new("bad.yml"), "a: [1, 2\nb: c\n").unwrap_err();
        assert_eq!(err.place.file, Path::new("bad.yml"));
        assert!(err.place.line >= 1, "{err}");
        let err = LocatedValue::parse(Path::new("d.yml"), "a: 1\na: 2\n").unwrap_err();
        assert_eq!(err.to_string(), "d.yml:2:1: duplicate mapping key: a");
    }
}
