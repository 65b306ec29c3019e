//! dsh-lazy-tools' search, as its authors describe it: lowercase, split on anything but
//! `[a-z0-9]` and CJK; per distinct query token +100 if it is the whole tool name, else +10 if
//! it is a token of the name; +3 if it is a token of the description; keep tools scoring above
//! zero, best first, ties in registration order.

use std::collections::HashSet;

use super::{Peer, PeerTool, is_cjk};

pub struct DshLazyTools<'a> {
    tools: &'a [PeerTool],
    indexed: Vec<Indexed>,
}

struct Indexed {
    name: String,
    name_tokens: HashSet<String>,
    description_tokens: HashSet<String>,
}

impl<'a> DshLazyTools<'a> {
    pub fn new(tools: &'a [PeerTool]) -> Self {
        let indexed = tools
            .iter()
            .map(|t| Indexed {
                name: t.name.to_lowercase(),
                name_tokens: tokens(&t.name).collect(),
                description_tokens: tokens(&t.description).collect(),
            })
            .collect();
        Self { tools, indexed }
    }
}

impl Peer for DshLazyTools<'_> {
    fn name(&self) -> &'static str {
        "dsh-lazy-tools"
    }

    fn rank(&self, query: &str, top_k: usize) -> Vec<usize> {
        let mut seen = HashSet::new();
        let query: Vec<String> = tokens(query).filter(|t| seen.insert(t.clone())).collect();
        let mut scored: Vec<(u32, usize)> = self
            .indexed
            .iter()
            .enumerate()
            .filter_map(|(i, tool)| {
                let score: u32 = query
                    .iter()
                    .map(|t| {
                        let name = if *t == tool.name {
                            100
                        } else if tool.name_tokens.contains(t) {
                            10
                        } else {
                            0
                        };
                        name + if tool.description_tokens.contains(t) {
                            3
                        } else {
                            0
                        }
                    })
                    .sum();
                (score > 0).then_some((score, i))
            })
            .collect();
        // A stable sort keeps registration order among equal scores.
        scored.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        debug_assert!(scored.iter().all(|&(_, i)| i < self.tools.len()));
        scored.into_iter().take(top_k).map(|(_, i)| i).collect()
    }
}

fn tokens(text: &str) -> impl Iterator<Item = String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || is_cjk(c)))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> PeerTool {
        PeerTool {
            id: name.replace("__", "/"),
            name: name.into(),
            description: description.into(),
            parameters: vec![],
        }
    }

    #[test]
    fn scores_as_described() {
        let tools = [
            tool("fs__read_file", "Read a file from disk."),
            tool("read", "Read anything."),
            tool("web__fetch", "Fetch a page and read it."),
        ];
        let dsh = DshLazyTools::new(&tools);
        // "read": +10 +3 for fs__read_file, +100 +3 for read, +3 for web__fetch.
        assert_eq!(dsh.rank("read read", 5), [1, 0, 2]);
        // "file": name token (+10) and description token (+3) of fs__read_file only.
        assert_eq!(dsh.rank("FILE", 5), [0]);
        // Ties keep registration order; unknown words match nothing.
        assert_eq!(dsh.rank("a", 5), [0, 2]);
        assert!(dsh.rank("zebra", 5).is_empty());
        assert_eq!(
            tokens("读取PDF文件, ok").collect::<Vec<_>>(),
            ["读取pdf文件", "ok"]
        );
    }
}
