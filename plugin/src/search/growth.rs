//! What an index keeps beyond what a query reads, so that an update can grow it without a
//! full build (see `update`): the builder, the figures of the last full build, each tool's and
//! group's terms, and the counts an idf is computed from.

use crate::keyed_hash::KeyedMap;

use super::documents::{Builder, GroupTable};
use super::fields::FIELD_COUNT;
use super::rows::Rows;
use crate::registry::{Origin, ToolDef};

/// The figures of the last full build that an update keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Frozen {
    /// How many tools it indexed (BM25's N).
    pub tools: usize,
    pub tool_average: [f32; FIELD_COUNT],
    pub group_average: [f32; FIELD_COUNT],
}

/// What an update needs beyond what a query reads.
#[derive(Debug, Default)]
pub(super) struct Growth {
    pub builder: Builder,
    pub frozen: Frozen,
    /// Per term, how many tools that are not removed hold it (own text or group's).
    pub document_frequency: Vec<u32>,
    /// Per term, how many tools' own names and live groups' names hold it.
    pub name_count: Vec<u32>,
    /// Per tool, its terms, marked `IN_NAME` (see `documents`).
    pub doc_terms: Rows<u32>,
    /// Per group, its terms, marked `IN_NAME` (see `documents`), and their saturated frequencies.
    pub group_terms: Rows<u32>,
    pub group_tf: Rows<(u32, f32)>,
    /// Per group, how many of its tools are not removed.
    pub group_live: Vec<u32>,
    pub groups: GroupTable,
    pub origins: Origins,
    /// Per tool added since the full build, its saturated frequencies.
    pub added_tf: Rows<(u32, f32)>,
    /// How many tools the full build indexed: added tools' ids start here.
    pub built: usize,
    /// Tools added, removed or changed since the full build.
    pub churn: usize,
    /// What the full build held: its postings (tools' and groups'), and the pieces of text
    /// it met (see [`Growth::grown`]).
    pub built_size: usize,
    pub built_group_items: usize,
    pub built_pieces: usize,
    /// The registry's group descriptions (hashed) as last indexed.
    pub registered: KeyedMap<Box<str>, u64>,
    /// Room for a tool's own terms while it is counted in or out (see `update`).
    pub own_terms: Vec<u32>,
    /// The [`Registry::groups_revision`](crate::registry::Registry::groups_revision) of the
    /// groups `registered` holds.
    pub groups_revision: u64,
}

impl Growth {
    /// What updates have added since the full build, counted as `built_size` is: the added
    /// tools' postings that are not removed, new groups' postings, and new pieces of text (a
    /// new term is a new piece). Each version of a tool edited again and again would
    /// otherwise stay, and each per-term table would grow with every new word.
    pub fn grown(&self) -> usize {
        self.added_tf.items_len()
            + self
                .group_tf
                .items_len()
                .saturating_sub(self.built_group_items)
            + self.builder.pieces().saturating_sub(self.built_pieces)
    }
}

/// How many live tools each MCP server (a tool's origin) has in the index: a group the shell
/// describes anew changes the text of exactly these.
#[derive(Debug, Default)]
pub(super) struct Origins {
    ids: KeyedMap<Box<str>, u32>,
    pub live: Vec<u32>,
    /// Per tool, its origin's id (`u32::MAX`: not an MCP server).
    pub of_tool: Vec<u32>,
}

impl Origins {
    pub fn add(&mut self, tool: &ToolDef) {
        let id = match &tool.origin {
            Origin::Mcp(server) => {
                let id = match self.ids.get(server.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = self.live.len() as u32;
                        self.ids.insert(server.as_str().into(), id);
                        self.live.push(0);
                        id
                    }
                };
                self.live[id as usize] += 1;
                id
            }
            Origin::Builtin | Origin::Agent(_) => u32::MAX,
        };
        self.of_tool.push(id);
    }

    pub fn remove(&mut self, doc: u32) {
        if let Some(live) = self
            .of_tool
            .get(doc as usize)
            .and_then(|&id| self.live.get_mut(id as usize))
        {
            *live -= 1;
        }
    }

    /// How many live tools come from `server`.
    pub fn live_of(&self, server: &str) -> u32 {
        self.ids.get(server).map_or(0, |&id| self.live[id as usize])
    }
}
