//! Growing the index by a few tools without a full build, the way a search engine adds a
//! segment and marks deleted documents: a changed or new tool is analysed into the small
//! segment of added tools (new document ids), a removed or replaced one is marked removed, and
//! only the idf of the terms whose holders changed is computed again (with the vocabulary
//! concepts those terms are in).
//!
//! What an update does not redo is the tool count and the average field lengths in the BM25F
//! formulas: they stay those of the last full build. Scores are so exactly those of a full
//! build of the same tools with those figures (a property test checks it), and drift from a
//! plain full build only as far as the registry has turned over since; past [`MAX_CHURN`] of
//! it, in tools or in what the index holds, the update is a full build.

use rustc_hash::FxHashSet;

use super::bm25;
use super::build::{exact_keys, gather, members};
use super::documents::{Docs, IN_NAME, TermCounts, marked, registry_doc_bytes, saturated};
use super::fields::{FIELD_COUNT, Field, ToolText};
use super::growth::Growth;
use super::holders::{self, Holders};
use super::index::SearchIndex;
use super::names::hash;
use super::rows::Rows;
use crate::registry::Registry;

/// An update that changes more than this share of the tools of the last full build (tools
/// added, removed or changed since, counted together), or leaves the index holding more than
/// this share of what the full build held beside it (postings and pieces of text, see
/// `Growth::grown`), is a full build.
pub const MAX_CHURN: f32 = 1.0 / 8.0;

/// What [`SearchIndex::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    Unchanged,
    /// Tools added and removed in place (a changed tool counts as both).
    Grown {
        added: usize,
        removed: usize,
    },
    Rebuilt,
}

impl SearchIndex {
    /// Brings the index up to `registry`, where only the tools named in `changed` (definitions
    /// or enrichment), and the groups, can differ from what it indexed. Builds afresh when
    /// that is simpler or the index has drifted too far (see the module's text).
    pub fn update(&mut self, registry: &Registry, changed: &[String]) -> Updated {
        let growth = &self.growth;
        if (growth.churn + changed.len()) as f32 > growth.frozen.tools as f32 * MAX_CHURN {
            *self = Self::build(registry);
            return Updated::Rebuilt;
        }
        let mut changed: Vec<&str> = changed.iter().map(String::as_str).collect();
        changed.sort_unstable();
        changed.dedup();
        let groups = self.changed_groups(registry);
        if groups.is_empty() {
            self.growth.groups_revision = registry.groups_revision();
        }
        if changed.is_empty() && groups.is_empty() {
            return Updated::Unchanged;
        }
        // The tools an update reads must read what a full build would: when the registry's
        // text moves past the budget (or back), each document's share moves, so all are read
        // again.
        let doc_bytes = registry_doc_bytes(registry, registry.indexed_definitions());
        if !self.growth.builder.reads_at_most(doc_bytes) {
            *self = Self::build(registry);
            return Updated::Rebuilt;
        }
        let mut affected: Vec<u32> = Vec::new();
        let mut removed = 0;
        let mut removed_added = false;
        for name in &changed {
            if let Some(doc) = self.find(name) {
                self.remove_doc(doc, &mut affected);
                removed += 1;
                removed_added |= doc as usize >= self.growth.built;
            }
        }
        if removed_added {
            self.drop_removed_rows();
        }
        // A group described anew changes the text of the tools still indexed under it.
        if groups
            .iter()
            .any(|name| self.growth.origins.live_of(name) > 0)
        {
            *self = Self::build(registry);
            return Updated::Rebuilt;
        }
        // The builder interns new terms into the index's dictionary.
        self.growth.builder.dictionary = std::mem::take(&mut self.dictionary);
        let grown = self.grow(registry, &changed, &mut affected);
        self.dictionary = std::mem::take(&mut self.growth.builder.dictionary);
        let growth = &self.growth;
        let Some(added) =
            grown.filter(|_| growth.grown() as f32 <= growth.built_size as f32 * MAX_CHURN)
        else {
            *self = Self::build(registry);
            return Updated::Rebuilt;
        };
        for name in groups {
            match registry.group(&name) {
                Some(group) => {
                    self.growth
                        .registered
                        .insert(name, hash(&group.description));
                }
                None => {
                    self.growth.registered.remove(&name);
                }
            }
        }
        self.growth.groups_revision = registry.groups_revision();

        let terms = self.growth.builder.texts.len();
        if self.group_count != self.growth.group_tf.len() {
            self.group_postings = gather(&self.growth.group_tf, 0, |_| false, terms);
            self.group_count = self.growth.group_tf.len();
        }
        let removed_docs = &self.removed;
        self.added = gather(
            &self.growth.added_tf,
            self.growth.built as u32,
            |doc| removed_docs[doc as usize],
            terms,
        );
        affected.sort_unstable();
        affected.dedup();
        self.refresh_idf(&affected);
        let Self {
            dictionary, growth, ..
        } = self;
        for &term in &affected {
            let t = term as usize;
            dictionary.set_held(term, growth.document_frequency[t] > 0);
            dictionary.set_in_names(&growth.builder.texts[t], term, growth.name_count[t] > 0);
        }
        Updated::Grown { added, removed }
    }

    /// Adds the registry's definition of each of `changed` names; `None` when that needs a
    /// full build (a group indexed with another description).
    fn grow(
        &mut self,
        registry: &Registry,
        changed: &[&str],
        affected: &mut Vec<u32>,
    ) -> Option<usize> {
        let mut added = 0;
        let mut text = ToolText::default();
        for name in changed {
            let Some(tool) = registry.indexed(name) else {
                continue;
            };
            text.read(tool);
            let growth = &mut self.growth;
            let mut group_docs = Docs::default();
            let groups_before = growth.group_tf.len() as u32;
            let group =
                growth
                    .builder
                    .group(registry, tool, &text, &mut growth.groups, &mut group_docs);
            let described = registry.group_of(tool).map(|g| hash(&g.description));
            if group < groups_before && growth.groups.described(group) != described {
                return None;
            }
            if group >= groups_before {
                self.add_group(&group_docs);
            }
            let growth = &mut self.growth;
            growth.builder.tool(registry, tool, &text);
            let mut docs = Docs::default();
            growth.builder.end_doc(&mut docs);
            growth.origins.add(tool);
            self.add_doc(&tool.name, text.own_name, group, &docs, affected);
            added += 1;
        }
        Some(added)
    }

    /// The frozen figures, for a full build to compare an updated index with.
    #[cfg(test)]
    pub(super) fn frozen(&self) -> super::growth::Frozen {
        self.growth.frozen
    }

    /// Groups the registry describes otherwise than when they were indexed (new, changed or
    /// gone); none when it holds the very groups indexed last.
    fn changed_groups(&self, registry: &Registry) -> Vec<Box<str>> {
        if registry.groups_revision() == self.growth.groups_revision {
            return Vec::new();
        }
        let registered = &self.growth.registered;
        let mut changed: Vec<Box<str>> = registry
            .groups()
            .filter(|g| registered.get(g.name.as_str()) != Some(&hash(&g.description)))
            .map(|g| g.name.as_str().into())
            .collect();
        changed.extend(
            registered
                .keys()
                .filter(|name| registry.group(name).is_none())
                .cloned(),
        );
        changed
    }

    /// The tool indexed under `name` and not removed.
    fn find(&self, name: &str) -> Option<u32> {
        let built = &self.names[..self.growth.built];
        if let Ok(doc) = built.binary_search_by(|n| n.as_str().cmp(name))
            && !self.removed[doc]
        {
            return Some(doc as u32);
        }
        (self.growth.built..self.names.len())
            .rev()
            .find(|&doc| !self.removed[doc] && self.names[doc] == name)
            .map(|doc| doc as u32)
    }

    fn remove_doc(&mut self, doc: u32, affected: &mut Vec<u32>) {
        self.removed[doc as usize] = true;
        self.exact_added.retain(|&(_, d)| d != doc);
        self.removed_count += 1;
        let growth = &mut self.growth;
        growth.churn += 1;
        growth.origins.remove(doc);
        let group = self.groups[doc as usize];
        count_tool(growth, doc, group, affected, false);
    }

    /// Empties the rows of the added tools that are removed: nothing reads them again.
    fn drop_removed_rows(&mut self) {
        let (built, removed) = (self.growth.built, &self.removed);
        self.growth
            .added_tf
            .empty_rows_from(0, |row| !removed[built + row]);
        self.growth
            .doc_terms
            .empty_rows_from(built, |doc| !removed[doc]);
    }

    fn add_group(&mut self, group_docs: &Docs) {
        let growth = &mut self.growth;
        let Some((lengths, counts)) = group_docs.iter().last() else {
            return;
        };
        let average = &growth.frozen.group_average;
        let (tf, terms) = (&mut growth.group_tf, &mut growth.group_terms);
        push_document(lengths, counts, average, Field::GroupName, tf, terms);
        growth.group_live.push(0);
    }

    /// Adds the tool `name` (its own name `own`, as the search read it), analysed into `docs`.
    fn add_doc(&mut self, name: &str, own: &str, group: u32, docs: &Docs, affected: &mut Vec<u32>) {
        let doc = self.names.len() as u32;
        let growth = &mut self.growth;
        let terms = growth.builder.texts.len();
        growth.document_frequency.resize(terms, 0);
        growth.name_count.resize(terms, 0);
        self.idf.resize(terms, 0.0);
        let (Some((lengths, counts)), Some(name_words)) =
            (docs.iter().last(), docs.name_words.iter().last())
        else {
            return;
        };
        let average = &growth.frozen.tool_average;
        let (tf, terms) = (&mut growth.added_tf, &mut growth.doc_terms);
        push_document(lengths, counts, average, Field::Name, tf, terms);
        growth.churn += 1;
        self.names.push(name.to_string());
        self.groups.push(group);
        self.name_words.push(name_words.iter().copied());
        self.removed.push(false);
        exact_keys(name, own, doc, &mut self.exact_added);
        self.exact_added.dedup();
        self.place_in_name_order(doc);
        count_tool(&mut self.growth, doc, group, affected, true);
    }

    /// Gives added tool `doc` its place in name order: between the built tools around its
    /// name, and in name order among the live tools added between the same two. Removed tools
    /// are never ranked, so their places do not matter; a server that reconnects again and
    /// again leaves many of them in one slot, which one pass over the slot then skips rather
    /// than sorts.
    fn place_in_name_order(&mut self, doc: u32) {
        let built = self.growth.built;
        let doc = doc as usize;
        let name = self.names[doc].as_str();
        let slot = self.names[..built].partition_point(|n| n.as_str() < name) as u64;
        let mut place = 1;
        for d in built..doc {
            if self.order[d] >> 32 != slot || self.removed[d] {
                continue;
            }
            if self.names[d].as_str() < name {
                place += 1;
            } else {
                self.order[d] += 1;
            }
        }
        self.order.push((slot << 32) | place);
    }

    /// The idf of `affected` terms (whose holders changed) and of the terms that share a
    /// vocabulary concept with one of them, computed again.
    fn refresh_idf(&mut self, affected: &[u32]) {
        let Self {
            growth,
            dictionary,
            idf,
            postings,
            added,
            group_postings,
            groups,
            removed,
            group_count,
            ..
        } = self;
        let texts = &growth.builder.texts;
        let df = &growth.document_frequency;
        let mut again: FxHashSet<u32> = affected.iter().copied().collect();
        let concepts: FxHashSet<u32> = affected
            .iter()
            .flat_map(|&t| holders::concepts_with(&texts[t as usize]))
            .copied()
            .collect();
        for &concept in &concepts {
            again.extend(holders::single_terms(concept).filter_map(|t| dictionary.any_term_id(t)));
        }
        let mut evaluate: Vec<u32> = again
            .iter()
            .flat_map(|&t| holders::concepts_with(&texts[t as usize]))
            .copied()
            .collect();
        evaluate.sort_unstable();
        evaluate.dedup();
        let tools = growth.frozen.tools;
        for &term in &again {
            idf[term as usize] = bm25::idf(tools, df[term as usize] as usize);
        }
        let members = members(groups, *group_count, removed);
        let holders = Holders {
            segments: [&*postings, &*added],
            group_postings: &*group_postings,
            members: &members,
            groups: &*groups,
            removed: &*removed,
        };
        let term_id = |t: &str| {
            dictionary
                .any_term_id(t)
                .filter(|&id| df.get(id as usize).is_some_and(|&df| df > 0))
        };
        for concept in evaluate {
            holders::translated_idf(concept, &holders, tools, term_id, |term, lower| {
                if again.contains(&term) {
                    idf[term as usize] = idf[term as usize].min(lower);
                }
            });
        }
    }
}

/// Appends a document's saturated frequencies (BM25F against `average`) to `tf`, and its
/// terms, marked where `name_field` holds them, to `terms`: what an update keeps of a group,
/// or of a tool it adds.
fn push_document(
    lengths: &[u32; FIELD_COUNT],
    counts: &[TermCounts],
    average: &[f32; FIELD_COUNT],
    name_field: Field,
    tf: &mut Rows<(u32, f32)>,
    terms: &mut Rows<u32>,
) {
    tf.push(saturated(counts, lengths, average));
    terms.push(marked(counts, name_field));
}

/// Counts tool `doc` of `group` in (`joins`) or out of the document frequencies and name
/// counts: its own terms, its group's (once), and its group's name while the group has a tool
/// that is not removed.
fn count_tool(growth: &mut Growth, doc: u32, group: u32, affected: &mut Vec<u32>, joins: bool) {
    let change = move |count: &mut u32| {
        if joins {
            *count += 1;
        } else {
            *count -= 1;
        }
    };
    let Growth {
        doc_terms,
        group_terms,
        document_frequency,
        name_count,
        group_live,
        own_terms,
        ..
    } = growth;
    let own = &doc_terms[doc as usize];
    let group_terms = &group_terms[group as usize];
    // The tool's own terms sorted, so that each of the group's is looked up rather than
    // compared with all of them (a tool and a group of 50,000 words each took 1.3 s).
    own_terms.clear();
    if !group_terms.is_empty() {
        own_terms.extend(own.iter().map(|&t| t & !IN_NAME));
        own_terms.sort_unstable();
    }
    for &marked in own {
        let term = marked & !IN_NAME;
        change(&mut document_frequency[term as usize]);
        if marked & IN_NAME != 0 {
            change(&mut name_count[term as usize]);
        }
        affected.push(term);
    }
    let live = &mut group_live[group as usize];
    change(live);
    // The group's name counts from its first live tool to its last.
    let name_changes = *live == u32::from(joins);
    for &marked in group_terms {
        let term = marked & !IN_NAME;
        let own_holds = own_terms.binary_search_by(|&t| {
            #[cfg(test)]
            tests::COMPARISONS.with(|c| c.set(c.get() + 1));
            t.cmp(&term)
        });
        if own_holds.is_err() {
            change(&mut document_frequency[term as usize]);
        }
        if name_changes && marked & IN_NAME != 0 {
            change(&mut name_count[term as usize]);
        }
        affected.push(term);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::registry::{Origin, ToolDef, ToolGroup};

    thread_local! {
        /// Term comparisons made counting tools in and out.
        pub static COMPARISONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    const WORDS: &[&str] = &[
        "get",
        "list",
        "create",
        "file",
        "files",
        "issue",
        "weather",
        "forecast",
        "read",
        "write",
        "delete",
        "search",
        "image",
        "repository",
        "message",
        "send",
        "stock",
        "price",
        "translate",
        "获取",
        "文件",
        "天气",
        "创建",
        "查询",
        "翻译",
        "the",
        "a",
    ];

    const QUERIES: &[&str] = &[
        "get weather forecast",
        "create issue",
        "read file",
        "获取天气",
        "文件",
        "search images",
        "send a message",
        "s1 price",
        "translat",
        "reposi",
        "s2__get_file",
        "delete_stock",
        "s1",
        "s3 files",
        "ns get",
    ];

    /// A tool drawn from `WORDS`: server, name words, description words, name's shape.
    type Spec = (u8, (usize, usize), Vec<usize>, u8);

    fn tool((server, (verb, noun), words, shape): &Spec, edit: u32) -> ToolDef {
        let word = |i: &usize| WORDS[i % WORDS.len()];
        let mut description: Vec<&str> = words.iter().map(word).collect();
        let edited = format!("v{edit}");
        if edit > 0 {
            description.push(&edited);
        }
        let name = match shape {
            // Named like a server, its own or another's (a builtin `github`).
            0 => format!("s{}", (*server as usize + verb) % 4),
            // A namespace of no described group, or of a server's.
            1 => format!("ns__{}", word(verb)),
            2 => format!("s{}__{}", (*server as usize + noun) % 4, word(verb)),
            _ => format!("s{server}__{}_{}", word(verb), word(noun)),
        };
        ToolDef {
            name,
            description: description.join(" "),
            parameters: "{}".into(),
            // Server 3's tools have no described group.
            origin: match (shape, noun % 3) {
                (0..=2, 0) => Origin::Builtin,
                (0..=2, 1) => Origin::Agent("a".into()),
                _ => Origin::Mcp(format!("s{server}")),
            },
        }
    }

    fn registry(specs: &[(Spec, bool, u32)], group_edit: u32) -> Registry {
        let tools = specs
            .iter()
            .filter(|(_, present, _)| *present)
            .map(|(spec, _, edit)| tool(spec, *edit))
            .collect();
        let groups = (0..3)
            .map(|g| ToolGroup {
                name: format!("s{g}"),
                description: format!("{} server {group_edit}", WORDS[g * 5]),
            })
            .collect();
        Registry::new(tools, groups)
    }

    fn ranking(index: &SearchIndex) -> Vec<Vec<(String, u32)>> {
        QUERIES
            .iter()
            .map(|q| {
                index
                    .search_scored(q, 100, |_| true)
                    .into_iter()
                    .map(|(name, score)| (name.to_string(), score.to_bits()))
                    .collect()
            })
            .collect()
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            0u8..4,
            (0..WORDS.len(), 0..WORDS.len()),
            prop::collection::vec(0..WORDS.len(), 0..8),
            prop_oneof![3 => Just(3u8), 1 => 0u8..3],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// After any joins, leaves, edits and group changes, an updated index ranks exactly as
        /// a full build of the same tools with the figures it keeps (tool count, average field
        /// lengths), and a full build's figures are its own again after a rebuild.
        #[test]
        fn an_updated_index_ranks_as_a_full_build_with_its_figures(
            pool in prop::collection::vec((spec(), any::<bool>()), 40..80),
            steps in prop::collection::vec((0usize..80, 0u8..8), 1..24),
        ) {
            let mut specs: Vec<(Spec, bool, u32)> =
                pool.into_iter().map(|(spec, present)| (spec, present, 0)).collect();
            let mut group_edit = 0;
            let mut index = SearchIndex::build(&registry(&specs, group_edit));
            for (at, action) in steps {
                let at = at % specs.len();
                let before = tool(&specs[at].0, specs[at].2).name;
                match action {
                    0..=2 => specs[at].1 = !specs[at].1,
                    3..=6 => specs[at].2 += 1,
                    _ => group_edit += 1,
                }
                let registry = registry(&specs, group_edit);
                let changed = if action == 7 { vec![] } else { vec![before] };
                let updated = index.update(&registry, &changed);
                let fresh = SearchIndex::build_frozen(&registry, Some(index.frozen()));
                prop_assert_eq!(ranking(&index), ranking(&fresh), "{:?}", updated);
                prop_assert_eq!(index.len(), fresh.len());
                if updated == Updated::Rebuilt {
                    prop_assert_eq!(ranking(&index), ranking(&SearchIndex::build(&registry)));
                }
            }
        }
    }

    #[test]
    fn a_few_tools_joining_grow_the_index_and_many_rebuild_it() {
        let specs: Vec<(Spec, bool, u32)> = (0..64)
            .map(|i| {
                (
                    (1, (i % WORDS.len(), i / WORDS.len()), vec![i, i + 3], 3),
                    i < 48,
                    0,
                )
            })
            .collect();
        let mut index = SearchIndex::build(&registry(&specs, 0));
        let mut joined = specs.clone();
        for spec in &mut joined[48..50] {
            spec.1 = true;
        }
        let names: Vec<String> = joined[48..50].iter().map(|s| tool(&s.0, 0).name).collect();
        let updated = index.update(&registry(&joined, 0), &names);
        assert_eq!(
            updated,
            Updated::Grown {
                added: 2,
                removed: 0
            }
        );
        assert_eq!(index.update(&registry(&joined, 0), &[]), Updated::Unchanged);
        let all: Vec<String> = specs.iter().map(|s| tool(&s.0, 0).name).collect();
        for spec in &mut joined {
            spec.1 = true;
        }
        assert_eq!(index.update(&registry(&joined, 0), &all), Updated::Rebuilt);
    }

    /// A tool joining or leaving a group is counted in or out with each of the group's terms
    /// looked up among its own, not compared with each of them: a tool and a group of 50,000
    /// words each took 1.3 s to add and as long to remove.
    #[test]
    fn a_large_tool_of_a_large_group_joins_and_leaves_in_near_linear_work() {
        // 2,000 distinct words: the prefix and three letters.
        let text = |prefix: &str| -> String {
            (0..2000u32)
                .map(|i| {
                    let letter = |n: u32| char::from(b'a' + (n % 26) as u8);
                    format!("{prefix}{}{}{}", letter(i), letter(i / 26), letter(i / 676))
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let big = ToolDef {
            name: "big__new".into(),
            description: text("tq"),
            parameters: "{}".into(),
            origin: Origin::Mcp("big".into()),
        };
        let first = ToolDef {
            name: "big__first".into(),
            description: "first tool".into(),
            ..big.clone()
        };
        let mut tools: Vec<ToolDef> = (0..40)
            .map(|i| ToolDef {
                name: format!("s{i}__tool"),
                description: format!("tool number {i}"),
                parameters: "{}".into(),
                origin: Origin::Mcp(format!("s{i}")),
            })
            .collect();
        tools.push(first);
        // Tools of the same words, so that the one joining is small beside the index.
        tools.extend((0..8).map(|i| ToolDef {
            name: format!("big__copy{i}"),
            ..big.clone()
        }));
        let groups = vec![ToolGroup {
            name: "big".into(),
            description: text("gq"),
        }];
        let mut index = SearchIndex::build(&Registry::new(tools.clone(), groups.clone()));
        let changed = ["big__new".to_string()];
        COMPARISONS.with(|c| c.set(0));
        tools.push(big);
        let joined = Registry::new(tools.clone(), groups.clone());
        assert!(matches!(
            index.update(&joined, &changed),
            Updated::Grown { .. }
        ));
        tools.pop();
        let left = Registry::new(tools, groups);
        assert!(matches!(
            index.update(&left, &changed),
            Updated::Grown { .. }
        ));
        let fresh = SearchIndex::build_frozen(&left, Some(index.frozen()));
        assert_eq!(ranking(&index), ranking(&fresh));
        // 2,000 group terms looked up twice among 2,000 own terms: about 11 comparisons each
        // (compared with all: 8 million).
        let comparisons = COMPARISONS.with(|c| c.get());
        assert!(comparisons < 2 * 2000 * 16, "{comparisons} comparisons");
    }

    /// A tool named like a server, of no described group itself, is a group of its own: the
    /// server's tools keep their group's text (a builtin `github` took the `github` server's
    /// name and description from its tools).
    #[test]
    fn a_tool_named_like_a_server_leaves_the_servers_group_its_text() {
        let tool = |name: &str, description: &str, origin: Origin| ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: "{}".into(),
            origin,
        };
        let github = || Origin::Mcp("github".into());
        let mut tools = vec![
            tool("github__create_issue", "Creates one.", github()),
            tool(
                "weather__forecast",
                "Forecast.",
                Origin::Mcp("weather".into()),
            ),
        ];
        let groups = vec![ToolGroup {
            name: "github".into(),
            description: "Pull requests and repositories on GitHub.".into(),
        }];
        let alone = SearchIndex::build(&Registry::new(tools.clone(), groups.clone()));
        tools.push(tool(
            "github",
            "Opens a repository's web page.",
            Origin::Builtin,
        ));
        let registry = Registry::new(tools, groups);
        let found = |index: &SearchIndex| -> Vec<String> {
            let found = index.search_scored("pull requests", 5, |_| true);
            found
                .into_iter()
                .map(|(name, _)| name.to_string())
                .collect()
        };
        assert_eq!(found(&alone), ["github__create_issue"]);
        assert_eq!(
            found(&SearchIndex::build(&registry)),
            ["github__create_issue"]
        );
    }

    /// What an index holds that updates grow: terms, pieces of text, and postings kept for
    /// updates.
    fn held(index: &SearchIndex) -> usize {
        let growth = &index.growth;
        growth.builder.texts.len()
            + growth.builder.pieces()
            + growth.doc_terms.items_len()
            + growth.added_tf.items_len()
            + growth.group_tf.items_len()
            + index.added.items_len()
    }

    /// A tool edited again and again, each time with new words, leaves the index holding
    /// about what a full build of the registry holds, not every version and every word ever
    /// seen: 500 such edits of one 84 KB tool among 10,000 took 1.5 GB, and each update
    /// slowed as the per-term tables grew.
    #[test]
    fn a_tool_edited_again_and_again_does_not_grow_the_index_without_bound() {
        let word = |i: usize| {
            let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
            format!("{}{}{}", letter(i), letter(i / 26), letter(i / 676))
        };
        let mut tools: Vec<ToolDef> = (0..2000)
            .map(|i| ToolDef {
                name: format!("s{}__t{i}", i % 50),
                description: format!("{} {} {}", word(i % 500), word(i % 300), word(i % 7)),
                parameters: "{}".into(),
                origin: Origin::Mcp(format!("s{}", i % 50)),
            })
            .collect();
        let mut index = SearchIndex::build(&Registry::new(tools.clone(), vec![]));
        let changed = [tools[0].name.clone()];
        for edit in 0..100 {
            tools[0].description = (0..200)
                .map(|i| format!("e{}", word(edit * 200 + i)))
                .collect::<Vec<_>>()
                .join(" ");
            let registry = Registry::new(tools.clone(), vec![]);
            index.update(&registry, &changed);
            let fresh = SearchIndex::build(&registry);
            assert!(
                held(&index) < held(&fresh) * 3 / 2,
                "edit {edit}: {} held, a full build {}",
                held(&index),
                held(&fresh)
            );
        }
    }

    /// The plugin keeps one registry and sets its groups on each change: a group described
    /// anew there reaches the index, and the same groups again change nothing.
    #[test]
    fn groups_set_again_in_the_same_registry_reach_the_index_when_they_changed() {
        let specs: Vec<(Spec, bool, u32)> = (0..12)
            .map(|i| ((i as u8 % 3, (i, i + 1), vec![i + 2], 3), true, 0))
            .collect();
        let mut copy = registry(&specs, 0);
        let mut index = SearchIndex::build(&copy);
        let groups =
            |edit: u32| -> Vec<ToolGroup> { registry(&specs, edit).groups().cloned().collect() };
        assert!(copy.set_groups(groups(0)).is_empty());
        assert_eq!(index.update(&copy, &[]), Updated::Unchanged);
        assert!(!copy.set_groups(groups(1)).is_empty());
        assert_ne!(index.update(&copy, &[]), Updated::Unchanged);
        let fresh = SearchIndex::build_frozen(&copy, Some(index.frozen()));
        assert_eq!(ranking(&index), ranking(&fresh));
        assert_eq!(index.update(&copy, &[]), Updated::Unchanged);
    }
}
