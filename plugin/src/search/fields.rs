//! The parts of a tool the search reads, and how much each counts.

use super::schema::Params;
use crate::registry::{Origin, Registry, ToolDef};

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
        let own_name = own_name_of(tool);
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

/// The own name of `tool`: what follows its MCP server's segment (`github__create_issue`,
/// `mcp__github__create_issue` -> `create_issue`), all of it, for an MCP tool's own name may
/// hold `__` too (`delete__messages_id` of an OpenAPI bridge, `github__create_issue` behind a
/// proxy server); else what follows the last `__`.
fn own_name_of(tool: &ToolDef) -> &str {
    match &tool.origin {
        Origin::Mcp(server) => after_segment(&tool.name, server),
        Origin::Builtin | Origin::Agent(_) => None,
    }
    .unwrap_or_else(|| own_name(&tool.name))
}

/// What follows `segment` in `name` when one of its first [`MAX_PREFIX_SEGMENTS`] whole
/// `__`-separated segments spells `segment` (the shell may have replaced characters that names
/// may not hold: any character other than a letter or digit matches any such).
fn after_segment<'a>(name: &'a str, segment: &str) -> Option<&'a str> {
    let mut start = 0;
    for _ in 0..MAX_PREFIX_SEGMENTS {
        let rest = spelled(&name[start..], segment)
            .and_then(|rest| rest.strip_prefix("__"))
            .filter(|rest| !rest.is_empty());
        if rest.is_some() {
            return rest;
        }
        start += name[start..].find("__")? + 2;
    }
    None
}

/// How many segments a shell puts before a tool's server (`mcp__github__create_issue`, one)
/// are looked at: each look compares the server's name, so a name of many `__` and a long
/// server name cost their product (100 KB of `_` took seconds).
const MAX_PREFIX_SEGMENTS: usize = 4;

/// What follows `text`'s spelling of `word`, if it begins with one (see [`after_segment`]).
fn spelled<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let mut chars = text.chars();
    for w in word.chars() {
        let c = chars.next()?;
        if c != w && (c.is_alphanumeric() || w.is_alphanumeric()) {
            return None;
        }
    }
    Some(chars.as_str())
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

    #[test]
    fn an_mcp_tools_own_name_is_all_that_follows_its_servers_segment() {
        let tool = |name: &str, origin: Origin| ToolDef {
            name: name.into(),
            description: String::new(),
            parameters: "{}".into(),
            origin,
        };
        let mcp = |server: &str| Origin::Mcp(server.into());
        for (name, origin, own) in [
            // An OpenAPI bridge names operations by method and path.
            (
                "sms__delete__messages_id",
                mcp("sms"),
                "delete__messages_id",
            ),
            // A proxy server namespaces the servers behind it.
            (
                "proxy__github__create_issue",
                mcp("proxy"),
                "github__create_issue",
            ),
            // A shell that prefixes MCP tools, and one that cleaned the server's name.
            ("mcp__github__create_issue", mcp("github"), "create_issue"),
            ("Ant-Design__list__all", mcp("Ant Design"), "list__all"),
            // No segment spells the server: the last `__` decides, as for any other tool.
            ("other__a__b", mcp("github"), "b"),
            ("github__", mcp("github"), "github__"),
            ("a__b__c", Origin::Builtin, "c"),
            ("github__a__b", Origin::Agent("github".into()), "b"),
        ] {
            assert_eq!(own_name_of(&tool(name, origin)), own, "{name}");
        }
    }
}
