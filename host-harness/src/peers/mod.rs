//! Other projects' tool search, reimplemented from how their authors describe it, so the
//! search benchmark scores lazy-tools against them on the same catalog and queries. Each
//! ranks the tools as the shell registers them (`<server>__<tool>`, description, parameters).

mod bm25;
mod dsh;
mod kocoro;

pub use bm25::Bm25;
pub use dsh::DshLazyTools;
pub use kocoro::Kocoro;

use serde_json::Value;

use crate::catalog::Catalog;

/// A tool as a peer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerTool {
    /// The catalog id, `server/tool`.
    pub id: String,
    /// The name the shell registers, `server__tool`.
    pub name: String,
    pub description: String,
    /// Top-level parameter names with their descriptions.
    pub parameters: Vec<(String, String)>,
}

impl PeerTool {
    pub fn from_catalog(catalog: &Catalog) -> Vec<PeerTool> {
        catalog
            .tools()
            .map(|(id, tool)| PeerTool {
                id,
                parameters: parameters(tool.parameters()),
                name: tool.name,
                description: tool.description,
            })
            .collect()
    }
}

fn parameters(schema: &Value) -> Vec<(String, String)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, p)| {
                    let description = p.get("description").and_then(Value::as_str);
                    (name.clone(), description.unwrap_or_default().to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A tool search other than lazy-tools.
pub trait Peer {
    /// The name the benchmark reports it under.
    fn name(&self) -> &'static str;
    /// Indexes of the matching tools, best first (at most `top_k`).
    fn rank(&self, query: &str, top_k: usize) -> Vec<usize>;
}

/// The three peers of the benchmark, over `tools`.
pub fn all(tools: &[PeerTool]) -> Vec<Box<dyn Peer + '_>> {
    vec![
        Box::new(DshLazyTools::new(tools)),
        Box::new(Kocoro::new(tools)),
        Box::new(Bm25::new(tools)),
    ]
}

/// CJK ideographs, kana and Hangul: the scripts peers keep as word characters.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
        | 0x20000..=0x3134F)
}
