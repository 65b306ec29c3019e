//! Kocoro's tool search (commit 4ec6772), as its authors describe it: the query's terms are
//! its ASCII `[a-z0-9_]+` runs of two characters or more, minus English stop words; a tool
//! matches if any term is a substring of its lowercase name + " " + description; matches are
//! sorted by name and the first five kept. A query with no term matches as a raw substring.

use super::{Peer, PeerTool};

/// The first five matches, by name: Kocoro ranks nothing.
const KEPT: usize = 5;

/// Common English function words (Kocoro's list is not published with the description).
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "if", "of", "at", "by", "for", "with", "about", "to",
    "from", "in", "on", "into", "is", "are", "was", "were", "be", "been", "it", "its", "this",
    "that", "these", "those", "as", "so", "than", "then", "me", "my", "we", "our", "you", "your",
    "he", "she", "they", "them", "their", "what", "which", "who", "how", "when", "where", "why",
    "do", "does", "did", "can", "could", "should", "would", "will", "all", "any", "some", "no",
    "not", "only", "very", "just", "up", "out", "over", "i",
];

pub struct Kocoro<'a> {
    tools: &'a [PeerTool],
    haystacks: Vec<String>,
    /// Tool indexes sorted by name.
    by_name: Vec<usize>,
}

impl<'a> Kocoro<'a> {
    pub fn new(tools: &'a [PeerTool]) -> Self {
        let haystacks = tools
            .iter()
            .map(|t| format!("{} {}", t.name, t.description).to_lowercase())
            .collect();
        let mut by_name: Vec<usize> = (0..tools.len()).collect();
        by_name.sort_by(|&a, &b| tools[a].name.cmp(&tools[b].name));
        Self {
            tools,
            haystacks,
            by_name,
        }
    }
}

impl Peer for Kocoro<'_> {
    fn name(&self) -> &'static str {
        "kocoro"
    }

    fn rank(&self, query: &str, top_k: usize) -> Vec<usize> {
        let lower = query.to_lowercase();
        let terms: Vec<&str> = lower
            .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .filter(|t| t.len() >= 2 && !STOP_WORDS.contains(t))
            .collect();
        let raw = lower.trim();
        self.by_name
            .iter()
            .copied()
            .filter(|&i| {
                let haystack = &self.haystacks[i];
                if terms.is_empty() {
                    !raw.is_empty() && haystack.contains(raw)
                } else {
                    terms.iter().any(|t| haystack.contains(t))
                }
            })
            .take(KEPT.min(top_k).min(self.tools.len()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> PeerTool {
        PeerTool {
            id: name.into(),
            name: name.into(),
            description: description.into(),
            parameters: vec![],
        }
    }

    #[test]
    fn matches_substrings_and_sorts_by_name() {
        let tools = [
            tool("zeta__weather", "Weather forecast."),
            tool("alpha__forecast_tool", "Forecasts."),
            tool("beta__files", "Reads files."),
        ];
        let kocoro = Kocoro::new(&tools);
        // "the" is a stop word, "x" too short; "forecast" is in two tools, listed by name.
        assert_eq!(kocoro.rank("the forecast x", 5), [1, 0]);
        assert_eq!(kocoro.rank("READ", 5), [2]);
        // No term: the raw query as a substring.
        assert_eq!(kocoro.rank("天气", 5), Vec::<usize>::new());
        assert_eq!(kocoro.rank("s.", 5), [1, 2]);
        assert_eq!(kocoro.rank("e", 1), [1]);
    }
}
