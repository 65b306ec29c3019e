//! Ranking: a parsed query's BM25F scores summed from the index's postings, a boost for tools
//! whose name the query spells out, exact names first, then greedy selection that crowds out a
//! fifth tool of one server. Ranking reads the index; the index never reads a query.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::index::{Postings, SearchIndex};
use super::query::{self, Form, Query};

/// How much more a tool counts when the query names all the words of its own name, and when
/// it names them in a row.
const NAME_WORDS: f32 = 0.3;
const NAME_PHRASE: f32 = 0.6;
/// Each tool already chosen from a group multiplies the next one's score by this: a
/// tie-break between servers, not a quota. At 0.85 the fourth or fifth tool of one API (the
/// right one, among its siblings) lost its place to weaker tools of other servers: 0.97 gave
/// task-dev hit@5 0.767 -> 0.791 and the openapi set 0.881 -> 0.925, no set lower (0.96 to
/// 0.99 all equal; at 1.0, without crowding, route-dev and Chinese each lose a query).
const CROWDING: f32 = 0.97;

impl SearchIndex {
    /// The names of at most `top_k` eligible tools that match `query`, best first. A tool
    /// whose whole name the query is ranks first; ties go to the smaller name.
    pub fn search(&self, query: &str, top_k: usize, eligible: impl Fn(&str) -> bool) -> Vec<&str> {
        self.search_scored(query, top_k, eligible)
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// [`SearchIndex::search`] with each tool's score (exact name matches rank first whatever
    /// their score).
    pub fn search_scored(
        &self,
        text: &str,
        top_k: usize,
        eligible: impl Fn(&str) -> bool,
    ) -> Vec<(&str, f32)> {
        if self.names.is_empty() || top_k == 0 {
            return Vec::new();
        }
        let query = query::parse(&self.dictionary, text);
        let mut scores = self.scores(&query);
        for (doc, score) in scores.iter_mut().enumerate() {
            if *score > 0.0 {
                *score *= self.name_boost(doc, &query);
            }
        }
        let exact = self.exact_matches(text);
        self.select(&scores, &exact, top_k, eligible)
    }

    /// Each tool's BM25F score for `query`: its own text's, plus its group's; none for a
    /// removed tool. A compound word of the query (`PatientView`) counts once per tool: a tool
    /// whose own name holds a part of it (`patient`) and whose server's name holds it whole
    /// (`patientview`) scores the better of the two, not both.
    pub(super) fn scores(&self, query: &Query) -> Vec<f32> {
        let size = self.names.len();
        let in_groups = (self.group_count > 0).then(|| GroupForms::new(self, query));
        let mut scores = accumulate(
            &[&self.postings, &self.added],
            &self.idf,
            size,
            &query.slots,
            in_groups.as_ref().map(|g| (g, self.groups.as_slice())),
        );
        if let Some(in_groups) = &in_groups {
            for (score, &group) in scores.iter_mut().zip(&self.groups) {
                *score += in_groups.totals[group as usize];
            }
        }
        if self.removed_count > 0 {
            for (score, &removed) in scores.iter_mut().zip(&self.removed) {
                if removed {
                    *score = 0.0;
                }
            }
        }
        scores
    }

    /// More for a tool whose own name of two words or more the query spells out: all of its
    /// words (`weather for the current city` for `get_current_weather`... in any order), or all
    /// in a row (`create presentation` for `create_presentation`).
    pub(super) fn name_boost(&self, doc: usize, query: &Query) -> f32 {
        let name = &self.name_words[doc];
        if name.len() < 2 || !name.iter().all(|&t| query.says(t)) {
            return 1.0;
        }
        let in_a_row = query
            .words
            .windows(name.len())
            .any(|w| w.iter().zip(name).all(|(q, n)| *q == Some(*n)));
        if in_a_row {
            1.0 + NAME_PHRASE
        } else {
            1.0 + NAME_WORDS
        }
    }

    /// Greedy selection with group crowding: each tool already chosen from a group lowers the
    /// next ones from it, so tools that do the same thing on different servers are all offered
    /// before a fifth tool of one server. A popped entry scored with a stale group count goes
    /// back with its new score. `exact` tools come first whatever their score.
    fn select(
        &self,
        scores: &[f32],
        exact: &[u32],
        top_k: usize,
        eligible: impl Fn(&str) -> bool,
    ) -> Vec<(&str, f32)> {
        let mut ranked: BinaryHeap<Ranked> = scores
            .iter()
            .enumerate()
            .filter(|&(_, &score)| score > 0.0)
            .map(|(doc, &score)| Ranked {
                exact: false,
                score,
                crowd: 0,
                doc: doc as u32,
                order: self.order[doc],
            })
            .collect();
        for &doc in exact {
            ranked.push(Ranked {
                exact: true,
                score: scores[doc as usize],
                crowd: 0,
                doc,
                order: self.order[doc as usize],
            });
        }
        let mut crowd: FxHashMap<u32, u32> = FxHashMap::default();
        let mut out: Vec<(&str, f32)> = Vec::with_capacity(top_k);
        while let Some(mut best) = ranked.pop() {
            // A tool is in the heap once, or twice when the query is its name: the exact entry
            // pops first, so the scored one is dropped (a scan of the tools chosen so far would
            // cost `explain`, which ranks every tool, time quadratic in their number).
            if !best.exact && exact.contains(&best.doc) {
                continue;
            }
            let group = self.groups[best.doc as usize];
            let count = crowd.get(&group).copied().unwrap_or(0);
            if best.crowd != count {
                best.score = scores[best.doc as usize] * CROWDING.powi(count as i32);
                best.crowd = count;
                ranked.push(best);
                continue;
            }
            let name = self.names[best.doc as usize].as_str();
            if !eligible(name) {
                continue;
            }
            *crowd.entry(group).or_default() += 1;
            out.push((name, scores[best.doc as usize]));
            if out.len() == top_k {
                break;
            }
        }
        out
    }
}

/// What the groups (MCP servers) hold of a query: per group, its score summed over the slots;
/// and, for a slot that a tool counts once with its group ([`Query::once`]), each form's
/// score in each group that holds it.
struct GroupForms {
    totals: Vec<f32>,
    /// Per slot, per form, group -> score; no forms for a slot counted as usual.
    forms: Vec<Vec<FxHashMap<u32, f32>>>,
}

impl GroupForms {
    fn new(index: &SearchIndex, query: &Query) -> Self {
        let totals = accumulate(
            &[&index.group_postings],
            &index.idf,
            index.group_count,
            &query.slots,
            None,
        );
        let idf = |term: u32| index.idf.get(term as usize).copied().unwrap_or(0.0);
        let forms = query
            .slots
            .iter()
            .zip(&query.once)
            .map(|(slot, &once)| {
                if slot.len() < 2 || !once {
                    return Vec::new();
                }
                slot.iter()
                    .map(|form| {
                        let mut scores = FxHashMap::default();
                        for &(term, weight) in form {
                            let weight = weight * idf(term);
                            for posting in index.group_postings.row(term as usize) {
                                *scores.entry(posting.doc).or_default() += weight * posting.score;
                            }
                        }
                        scores
                    })
                    .collect()
            })
            .collect();
        Self { totals, forms }
    }

    /// True when a tool counts slot `slot` once with its group.
    fn counted_once(&self, slot: usize) -> bool {
        !self.forms[slot].is_empty()
    }

    /// `group`'s score for form `form` of slot `slot`.
    fn form(&self, slot: usize, form: usize, group: u32) -> f32 {
        self.forms[slot][form].get(&group).copied().unwrap_or(0.0)
    }

    /// `group`'s score for slot `slot`: its best form.
    fn best(&self, slot: usize, group: u32) -> f32 {
        (0..self.forms[slot].len())
            .map(|form| self.form(slot, form, group))
            .fold(0.0, f32::max)
    }
}

/// The score of each of `size` documents: per slot (a word of the query), the best of its
/// forms, a form scoring the sum of its terms. A document is in one of the `segments`. With
/// `groups` (what the groups hold, and each document's group), a slot counted once scores a
/// document's best form together with its group's score for that form, less the group's own
/// best (added to every tool of the group, see [`SearchIndex::scores`]).
fn accumulate(
    segments: &[&Postings],
    idf: &[f32],
    size: usize,
    slots: &[Vec<Form>],
    groups: Option<(&GroupForms, &[u32])>,
) -> Vec<f32> {
    let idf = |term: u32| idf.get(term as usize).copied().unwrap_or(0.0);
    let mut scores = vec![0f32; size];
    let mut best = vec![0f32; size];
    let mut sum = vec![0f32; size];
    let mut in_slot: Vec<u32> = Vec::new();
    let mut in_form: Vec<u32> = Vec::new();
    for (slot_at, slot) in slots.iter().enumerate() {
        // Most slots are one term: add it straight away.
        if let [form] = slot.as_slice()
            && let [(term, weight)] = form.as_slice()
        {
            let weight = weight * idf(*term);
            for segment in segments {
                for posting in segment.row(*term as usize) {
                    scores[posting.doc as usize] += weight * posting.score;
                }
            }
            continue;
        }
        let once = groups.filter(|(forms, _)| forms.counted_once(slot_at));
        for (form_at, form) in slot.iter().enumerate() {
            for &(term, weight) in form {
                let weight = weight * idf(term);
                for segment in segments {
                    for posting in segment.row(term as usize) {
                        let doc = posting.doc as usize;
                        if sum[doc] == 0.0 {
                            in_form.push(posting.doc);
                        }
                        sum[doc] += weight * posting.score;
                    }
                }
            }
            for &doc in &in_form {
                let doc = doc as usize;
                if best[doc] == 0.0 {
                    in_slot.push(doc as u32);
                }
                let with_group =
                    once.map_or(0.0, |(forms, of)| forms.form(slot_at, form_at, of[doc]));
                best[doc] = best[doc].max(sum[doc] + with_group);
                sum[doc] = 0.0;
            }
            in_form.clear();
        }
        for &doc in &in_slot {
            let doc = doc as usize;
            let alone = once.map_or(0.0, |(forms, of)| forms.best(slot_at, of[doc]));
            scores[doc] += (best[doc] - alone).max(0.0);
            best[doc] = 0.0;
        }
        in_slot.clear();
    }
    scores
}

/// A candidate in the ranking: exact name matches first, then by score, then by name.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    exact: bool,
    score: f32,
    /// How many tools of its group were chosen when `score` was computed.
    crowd: u32,
    doc: u32,
    /// The tool's place in name order.
    order: u64,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.exact
            .cmp(&other.exact)
            .then(self.score.total_cmp(&other.score))
            .then(other.order.cmp(&self.order))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}
