//! Ranking tools for `tool_search`. The index is built once per registry
//! change; a query only scores the tools the caller says are eligible.

use std::collections::{HashMap, HashSet};

use crate::registry::Registry;

#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
}

#[derive(Debug)]
struct Doc {
    name: String,
    name_lower: String,
    name_tokens: HashSet<String>,
    description_tokens: HashSet<String>,
}

impl SearchIndex {
    /// Indexes one document per tool name (the first definition wins).
    pub fn build(registry: &Registry) -> Self {
        let tools = registry.tools();
        let mut seen = HashMap::new();
        let mut docs = Vec::with_capacity(tools.len());
        for tool in tools {
            if seen.insert(tool.name.clone(), ()).is_some() {
                continue;
            }
            docs.push(Doc {
                name: tool.name.clone(),
                name_lower: tool.name.to_lowercase(),
                name_tokens: tokens(&tool.name).collect(),
                description_tokens: tokens(&tool.description).collect(),
            });
        }
        Self { docs }
    }

    /// The names of at most `top_k` eligible tools that match `query`, best
    /// first; ties are broken by name so results are deterministic.
    pub fn search(&self, query: &str, top_k: usize, eligible: impl Fn(&str) -> bool) -> Vec<&str> {
        let query_tokens: Vec<String> = {
            let mut seen = HashSet::new();
            tokens(query).filter(|t| seen.insert(t.clone())).collect()
        };
        let mut scored: Vec<(u32, &str)> = self
            .docs
            .iter()
            .filter(|doc| eligible(&doc.name))
            .filter_map(|doc| {
                let score: u32 = query_tokens
                    .iter()
                    .map(|t| {
                        let name = if *t == doc.name_lower {
                            100
                        } else if doc.name_tokens.contains(t) {
                            10
                        } else {
                            0
                        };
                        name + if doc.description_tokens.contains(t) {
                            3
                        } else {
                            0
                        }
                    })
                    .sum();
                (score > 0).then_some((score, doc.name.as_str()))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(top_k)
            .map(|(_, name)| name)
            .collect()
    }
}

fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}
