//! Why a tool ranks where it does for a query, as a search engine's `explain` says it: the
//! query as the index reads it (its slots: one per word, each with the forms a tool may hold
//! it in), and each slot's share of the tool's score. For whoever writes a catalog or its
//! enrichment (`x-lazy-tools`) and wants to know why a tool is missed, not for the model: it
//! ranks the whole index once and scores it again once per slot.
//!
//! A tool's score is the sum of its scores for each slot alone (see `rank::accumulate`, whose
//! slots add up), times its name boost; an explanation reads it so, from the same code that
//! ranks, rather than from a second account of the scoring.

use super::index::SearchIndex;
use super::query::{self, Query};

/// A term of the query as the index holds it (stemmed, lowercase), and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedTerm {
    pub term: String,
    pub weight: f32,
}

/// One word of the query as the index reads it: the forms a tool may hold it in (as written,
/// joined, translated, a synonym, a prefix of a name word, ...), each a list of terms that a
/// tool must all hold to match it fully. A tool scores the best form it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub forms: Vec<Vec<WeightedTerm>>,
}

impl Slot {
    /// The term the slot is known by: its first form's first term, the word as written
    /// where the query holds it.
    pub fn label(&self) -> &str {
        self.forms
            .first()
            .and_then(|form| form.first())
            .map_or("", |t| t.term.as_str())
    }
}

/// What one slot adds to a tool's score.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The slot's place in [`SearchIndex::read_query`]'s list.
    pub slot: usize,
    /// The slot's share of the score, its server's text included, before the name boost.
    pub score: f32,
    /// The slot's terms that the tool's own text (name, description, parameters,
    /// enrichment) holds, and those its server's name or description holds.
    pub in_tool: Vec<String>,
    pub in_server: Vec<String>,
}

/// Why one tool ranks where it does for a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// Its place in the ranking `search` makes (1 is first), among every tool that scores or
    /// is named exactly; `None` when it does neither.
    pub rank: Option<usize>,
    /// The query is the tool's whole or own name: it ranks first whatever its score.
    pub exact: bool,
    /// Its score as `search_scored` reports it: the shares' sum times `name_boost`.
    pub score: f32,
    /// More for a tool whose own name the query spells out (1 when it does not).
    pub name_boost: f32,
    /// The slots that add to its score, largest share first.
    pub shares: Vec<Share>,
}

impl SearchIndex {
    /// `text` as a query of this index reads it: its slots, in the order it made them.
    pub fn read_query(&self, text: &str) -> Vec<Slot> {
        let query = query::parse(&self.dictionary, text);
        let texts = self.dictionary.texts();
        query
            .slots
            .iter()
            .map(|forms| Slot {
                forms: forms
                    .iter()
                    .map(|form| {
                        form.iter()
                            .map(|&(term, weight)| WeightedTerm {
                                term: texts.get(term as usize).copied().unwrap_or("").into(),
                                weight,
                            })
                            .collect()
                    })
                    .collect(),
            })
            .collect()
    }

    /// Why `tool` (a name as the index holds it) ranks where it does for `text`; `None` when
    /// the index holds no such tool.
    pub fn explain(&self, text: &str, tool: &str) -> Option<Explanation> {
        let doc = (0..self.names.len())
            .find(|&doc| self.names[doc] == tool && !self.is_removed(doc as u32))?;
        let rank = self
            .search_scored(text, self.names.len(), |_| true)
            .iter()
            .position(|&(name, _)| name == tool)
            .map(|at| at + 1);
        let exact = self.exact_matches(text).contains(&(doc as u32));
        let query = query::parse(&self.dictionary, text);
        let total = self.scores(&query)[doc];
        let name_boost = if total > 0.0 {
            self.name_boost(doc, &query)
        } else {
            1.0
        };
        let texts = self.dictionary.texts();
        let mut shares: Vec<Share> = (0..query.slots.len())
            .filter_map(|slot| {
                let score = self.scores(&query.slot_alone(slot))[doc];
                (score > 0.0).then(|| self.share(&query, slot, score, doc, &texts))
            })
            .collect();
        shares.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        Some(Explanation {
            rank,
            exact,
            score: total * name_boost,
            name_boost,
            shares,
        })
    }

    /// Slot `slot`'s share of document `doc`'s score, with the terms that earn it.
    fn share(&self, query: &Query, slot: usize, score: f32, doc: usize, texts: &[&str]) -> Share {
        let group = self.groups[doc];
        let mut terms: Vec<u32> = query.slots[slot]
            .iter()
            .flatten()
            .map(|&(t, _)| t)
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let text = |term: u32| texts.get(term as usize).copied().unwrap_or("").to_string();
        let held = |postings: &super::index::Postings, term: u32, holder: u32| {
            postings.row(term as usize).iter().any(|p| p.doc == holder)
        };
        Share {
            slot,
            score,
            in_tool: terms
                .iter()
                .filter(|&&t| {
                    held(&self.postings, t, doc as u32) || held(&self.added, t, doc as u32)
                })
                .map(|&t| text(t))
                .collect(),
            in_server: terms
                .iter()
                .filter(|&&t| held(&self.group_postings, t, group))
                .map(|&t| text(t))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Origin, Registry, ToolDef, ToolGroup};

    fn index() -> SearchIndex {
        let tool = |name: &str, description: &str, server: &str| ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: r#"{"properties": {"path": {"description": "Where the file goes"}}}"#
                .into(),
            origin: Origin::Mcp(server.into()),
        };
        let tools = vec![
            tool("fs__write_file", "Create or overwrite a file.", "fs"),
            tool("fs__read_file", "Read the contents of a file.", "fs"),
            tool(
                "notes__write_note",
                "Write a note to the notebook.",
                "notes",
            ),
            tool("weather__get_forecast", "Tomorrow's forecast.", "weather"),
        ];
        let groups = vec![ToolGroup {
            name: "notes".into(),
            description: "Markdown notes kept in a notebook".into(),
        }];
        SearchIndex::build(&Registry::new(tools, groups))
    }

    #[test]
    fn a_tools_shares_add_up_to_the_score_search_gives_it_at_its_rank() {
        let index = index();
        for query in [
            "write a markdown file",
            "write file",
            "read the notebook",
            "写文件",
            "fs__read_file",
        ] {
            let ranked = index.search_scored(query, 10, |_| true);
            assert!(!ranked.is_empty(), "{query}");
            for (at, &(name, score)) in ranked.iter().enumerate() {
                let why = index.explain(query, name).unwrap();
                assert_eq!(why.rank, Some(at + 1), "{query}: {name}");
                assert!(
                    (why.score - score).abs() < 1e-3 * score.max(1.0),
                    "{query}: {name}"
                );
                let sum: f32 = why.shares.iter().map(|s| s.score).sum();
                assert!(
                    (sum * why.name_boost - score).abs() < 1e-3 * score.max(1.0),
                    "{query}: {name}: {sum} x {} against {score}",
                    why.name_boost
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_shares_add_up_for_any_query_of_catalog_words(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "write", "writes", "read", "file", "files", "note", "markdown", "notebook",
                "forecast", "tomorrow", "wrte", "写", "文件", "笔记", "天气", "the", "fs", "notes",
            ]), 1..8)
        ) {
            let index = index();
            let query = words.join(" ");
            for (at, (name, score)) in index.search_scored(&query, 10, |_| true).into_iter().enumerate() {
                let why = index.explain(&query, name).unwrap();
                let sum: f32 = why.shares.iter().map(|s| s.score).sum();
                proptest::prop_assert_eq!(why.rank, Some(at + 1));
                proptest::prop_assert!((sum * why.name_boost - score).abs() < 1e-3 * score.max(1.0));
            }
        }
    }

    #[test]
    fn a_share_names_the_terms_the_tool_and_its_server_hold() {
        let index = index();
        let slots = index.read_query("write a markdown note");
        let labels: Vec<&str> = slots.iter().map(Slot::label).collect();
        assert!(labels.contains(&"write") && labels.contains(&"markdown"));
        let why = index
            .explain("write a markdown note", "notes__write_note")
            .unwrap();
        assert_eq!(why.rank, Some(1));
        assert!(why.name_boost > 1.0, "the query spells `write note` out");
        let of = |label: &str| {
            why.shares
                .iter()
                .find(|s| slots[s.slot].label() == label)
                .unwrap()
        };
        // `markdown` is in the server's description only; `write` in the tool's own text.
        assert!(of("markdown").in_server.contains(&"markdown".to_string()));
        assert!(of("markdown").in_tool.is_empty());
        assert!(of("write").in_tool.contains(&"write".to_string()));
    }

    #[test]
    fn a_tool_the_query_misses_has_no_rank_and_no_shares() {
        let index = index();
        let why = index
            .explain("write a note", "weather__get_forecast")
            .unwrap();
        assert_eq!(why.rank, None);
        assert_eq!((why.score, why.shares.len()), (0.0, 0));
        assert_eq!(index.explain("write a note", "no__such_tool"), None);
    }
}
