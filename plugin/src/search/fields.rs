//! The parts of a tool the search reads, and how much each counts.

use super::schema::Params;
use crate::registry::{Registry, ToolDef};

/// A weighted part of a tool's text (BM25F fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The tool's own name: the last `__` segment of `server__tool`.
    Name,
    /// Its group (MCP server) name and any namespace before its own name.
    GroupName,
    /// The description's first sentence, which says what the tool is for; it counts on top
    /// of the whole description, so a long description's asides weigh less.
    Summary,
    Description,
    ParamNames,
    ParamDescriptions,
    GroupDescription,
    /// What the shell adds for search (WIT 0.3.0 `tool-enrichment`): keywords, example
    /// requests, descriptions in other languages. Not the tool's own words, so it counts less
    /// than its summary.
    Enrichment,
}

pub const FIELD_COUNT: usize = 8;

impl Field {
    pub fn index(self) -> usize {
        self as usize
    }

    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Name,
        Field::GroupName,
        Field::Summary,
        Field::Description,
        Field::ParamNames,
        Field::ParamDescriptions,
        Field::GroupDescription,
        Field::Enrichment,
    ];

    /// How much a term in this field counts against one in the description.
    pub fn weight(self) -> f32 {
        match self {
            Field::Name => 2.0,
            Field::GroupName => 1.5,
            Field::Summary => 1.0,
            Field::Description => 0.5,
            Field::ParamNames => 0.5,
            Field::ParamDescriptions => 0.3,
            Field::GroupDescription => 0.4,
            Field::Enrichment => 0.6,
        }
    }
}

/// The text of one tool, field by field.
#[derive(Debug, Default)]
pub struct ToolText<'a> {
    /// The name's own segment, and what comes before it (`server__`).
    pub own_name: &'a str,
    namespace: &'a str,
    /// The description's first sentence, and the rest.
    pub summary: &'a str,
    pub rest: &'a str,
    pub params: Params<'a>,
}

impl<'a> ToolText<'a> {
    /// Reads `tool`, reusing this text's buffers (an index build reads every tool).
    pub fn read(&mut self, tool: &'a ToolDef) {
        let own_name = own_name(&tool.name);
        let description = tool.description.as_str();
        let indent = description.len() - description.trim_start().len();
        let summary_end = indent + crate::guards::sentence_end(&description[indent..]);
        self.own_name = own_name;
        self.namespace = &tool.name[..tool.name.len() - own_name.len()];
        self.summary = &description[..summary_end];
        self.rest = &description[summary_end..];
        self.params.read(&tool.parameters);
    }

    /// The segments of the name before its own (`a__b__tool` -> a, b).
    pub fn namespace(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.namespace.split("__").filter(|s| !s.is_empty())
    }
}

/// The tool's own name: what follows the last `__` (`github__create_issue` -> `create_issue`).
pub fn own_name(name: &str) -> &str {
    // A byte search: `rsplit_once` sets up a general substring searcher on every call, and
    // comparing two-byte windows as slices calls `memcmp` in the component.
    let bytes = name.as_bytes();
    let last = (1..bytes.len())
        .rev()
        .find(|&i| bytes[i] == b'_' && bytes[i - 1] == b'_')
        .map(|i| i - 1);
    match last {
        Some(at) if at + 2 < name.len() => &name[at + 2..],
        _ => name,
    }
}

/// The group (MCP server) of a tool: its name and description, if the host knows it.
pub fn group_of<'a>(registry: &'a Registry, tool: &ToolDef) -> Option<(&'a str, &'a str)> {
    registry
        .group_of(tool)
        .map(|g| (g.name.as_str(), g.description.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_name_follows_the_last_double_underscore() {
        for (name, own) in [
            ("github__create_issue", "create_issue"),
            ("a__b__c", "c"),
            ("a___b", "b"),
            ("a____b", "b"),
            ("plain_name", "plain_name"),
            ("server__", "server__"),
            ("__x", "x"),
            ("__", "__"),
            ("", ""),
            ("天气__查询", "查询"),
        ] {
            assert_eq!(own_name(name), own, "{name}");
            let by_split = match name.rsplit_once("__") {
                Some((_, own)) if !own.is_empty() => own,
                _ => name,
            };
            assert_eq!(own_name(name), by_split, "{name}");
        }
    }
}
