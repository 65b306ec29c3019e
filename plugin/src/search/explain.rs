//! Why a tool ranks where it does for a query, as a search engine's `explain` says it: the
//! query as the index reads it (its slots: one per word, each with the forms a tool may hold
//! it in), and each slot's share of the tool's score. For whoever writes a catalog or its
//! enrichment (`x-lazy-tools`) and wants to know why a tool is missed, not for the model: it
//! ranks the whole index once and scores it again once per slot, for any number of tools.
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
    /// The term the slot is known by: its first form's first term, the query's word as the
    /// index holds it, or the first form of the vocabulary concept that took the word (`写`
    /// reads as `write`).
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
        let texts = self.term_texts();
        query
            .slots
            .iter()
            .map(|forms| Slot {
                forms: forms
                    .iter()
                    .map(|form| {
                        form.iter()
                            .map(|&(term, weight)| WeightedTerm {
                                term: text_of(texts, term),
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
        self.explain_each(text, &[tool]).pop().flatten()
    }

    /// [`SearchIndex::explain`] for each of `tools`, in order: the query is ranked, and
    /// scored slot by slot, once for all of them.
    pub fn explain_each(&self, text: &str, tools: &[&str]) -> Vec<Option<Explanation>> {
        let ranking = self.search_scored(text, self.names.len(), |_| true);
        let exact = self.exact_matches(text);
        let query = query::parse(&self.dictionary, text);
        let totals = self.scores(&query);
        let by_slot: Vec<Vec<f32>> = (0..query.slots.len())
            .map(|slot| self.scores(&query.slot_alone(slot)))
            .collect();
        let texts = self.term_texts();
        tools
            .iter()
            .map(|&tool| {
                let doc = (0..self.names.len())
                    .find(|&doc| self.names[doc] == tool && !self.is_removed(doc as u32))?;
                let rank = ranking
                    .iter()
                    .position(|&(name, _)| name == tool)
                    .map(|at| at + 1);
                let total = totals[doc];
                let name_boost = if total > 0.0 {
                    self.name_boost(doc, &query)
                } else {
                    1.0
                };
                let mut shares: Vec<Share> = by_slot
                    .iter()
                    .enumerate()
                    .filter(|(_, scores)| scores[doc] > 0.0)
                    .map(|(slot, scores)| self.share(&query, slot, scores[doc], doc, texts))
                    .collect();
                shares.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
                Some(Explanation {
                    rank,
                    exact: exact.contains(&(doc as u32)),
                    score: total * name_boost,
                    name_boost,
                    shares,
                })
            })
            .collect()
    }

    /// Each term's text by id: the analysis interns them so, and keeps them for updates.
    fn term_texts(&self) -> &[Box<str>] {
        &self.growth.builder.texts
    }

    /// Slot `slot`'s share of document `doc`'s score, with the terms that earn it.
    fn share(
        &self,
        query: &Query,
        slot: usize,
        score: f32,
        doc: usize,
        texts: &[Box<str>],
    ) -> Share {
        let group = self.groups[doc];
        let mut terms: Vec<u32> = query.slots[slot]
            .iter()
            .flatten()
            .map(|&(t, _)| t)
            .collect();
        terms.sort_unstable();
        terms.dedup();
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
                .map(|&t| text_of(texts, t))
                .collect(),
            in_server: terms
                .iter()
                .filter(|&&t| held(&self.group_postings, t, group))
                .map(|&t| text_of(texts, t))
                .collect(),
        }
    }
}

/// The text of term `term`.
fn text_of(texts: &[Box<str>], term: u32) -> String {
    texts.get(term as usize).map_or("", |t| t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Origin, Registry, ToolDef, ToolGroup};

    fn tool(name: &str, description: &str, server: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: r#"{"properties": {"path": {"description": "Where the file goes"}}}"#
                .into(),
            origin: Origin::Mcp(server.into()),
        }
    }

    /// Tools of four servers, one of them named by a compound word (`PatientView`), which a
    /// tool counts once between its own text and its server's.
    fn tools() -> (Vec<ToolDef>, Vec<ToolGroup>) {
        let tools = vec![
            tool("fs__write_file", "Create or overwrite a file.", "fs"),
            tool("fs__read_file", "Read the contents of a file.", "fs"),
            tool(
                "notes__write_note",
                "Write a note to the notebook.",
                "notes",
            ),
            tool("weather__get_forecast", "Tomorrow's forecast.", "weather"),
            tool(
                "patientview__get_patient",
                "Get a patient's record.",
                "patientview",
            ),
        ];
        let groups = vec![
            ToolGroup {
                name: "notes".into(),
                description: "Markdown notes kept in a notebook".into(),
            },
            ToolGroup {
                name: "patientview".into(),
                description: "Patient records".into(),
            },
        ];
        (tools, groups)
    }

    fn index() -> SearchIndex {
        let (tools, groups) = tools();
        SearchIndex::build(&Registry::new(tools, groups))
    }

    /// The same tools after a full build of them and twenty more, grown by one server's tool
    /// (an added segment, not a rebuild).
    fn grown() -> SearchIndex {
        let (mut tools, groups) = tools();
        tools.extend((0..20).map(|i| tool(&format!("misc__tool_{i}"), "Does a thing.", "misc")));
        let mut index = SearchIndex::build(&Registry::new(tools.clone(), groups.clone()));
        tools.push(tool(
            "journal__write_entry",
            "Write a journal entry to a file.",
            "journal",
        ));
        let changed = ["journal__write_entry".to_string()];
        let updated = index.update(&Registry::new(tools, groups), &changed);
        assert!(matches!(
            updated,
            crate::search::Updated::Grown { added: 1, .. }
        ));
        index
    }

    /// Every tool `search` ranks for `query`: its explanation gives the same place and
    /// score, and its shares add up to that score.
    fn shares_add_up(index: &SearchIndex, query: &str) -> Result<(), String> {
        let ranked = index.search_scored(query, 30, |_| true);
        for (at, &(name, score)) in ranked.iter().enumerate() {
            let why = index
                .explain(query, name)
                .ok_or(format!("{name} unknown"))?;
            let sum: f32 = why.shares.iter().map(|s| s.score).sum();
            let close = |a: f32| (a - score).abs() < 1e-3 * score.max(1.0);
            if why.rank != Some(at + 1) || !close(why.score) || !close(sum * why.name_boost) {
                return Err(format!("{query}: {name} at {at}, {score}: {why:?}"));
            }
        }
        Ok(())
    }

    #[test]
    fn a_tools_shares_add_up_to_the_score_search_gives_it_at_its_rank() {
        let (built, grown) = (index(), grown());
        for query in [
            "write a markdown file",
            "write file",
            "read the notebook",
            "写文件",
            "fs__read_file",
            "PatientView patient record",
            "journal entry",
        ] {
            assert!(!grown.search(query, 5, |_| true).is_empty(), "{query}");
            shares_add_up(&built, query).unwrap();
            shares_add_up(&grown, query).unwrap();
        }
        let why = grown
            .explain("journal entry", "journal__write_entry")
            .unwrap();
        assert_eq!(why.rank, Some(1));
    }

    proptest::proptest! {
        #[test]
        fn the_shares_add_up_for_any_query_of_catalog_words(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "write", "writes", "read", "file", "files", "note", "markdown", "notebook",
                "forecast", "tomorrow", "wrte", "写", "文件", "笔记", "天气", "the", "fs", "notes",
                "PatientView", "patient", "record", "journal", "entry",
            ]), 1..8),
            grown_index in proptest::bool::ANY,
        ) {
            let index = if grown_index { grown() } else { index() };
            let query = words.join(" ");
            if let Err(wrong) = shares_add_up(&index, &query) {
                proptest::prop_assert!(false, "{}", wrong);
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
    fn tools_explained_together_are_explained_as_alone() {
        let index = grown();
        let tools = [
            "notes__write_note",
            "no__such_tool",
            "fs__write_file",
            "journal__write_entry",
        ];
        let together = index.explain_each("write a journal file", &tools);
        let alone: Vec<_> = tools
            .iter()
            .map(|t| index.explain("write a journal file", t))
            .collect();
        assert_eq!(together, alone);
        assert!(together[0].is_some() && together[1].is_none());
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
