//! Building the index from a registry: analyse every tool and group once, count terms per
//! field, saturate each posting's weighted frequency with BM25F (see `bm25`) and compute each
//! term's idf, so that a query only multiplies and sums. The analysis itself is `documents`'s;
//! `update` grows the index with the same.

use super::bm25;
use super::documents::{
    Builder, Docs, GroupTable, IN_NAME, TermCounts, marked, registry_doc_bytes, saturated,
};
use super::fields::{FIELD_COUNT, Field, ToolText, own_name};
use super::growth::{Frozen, Growth, Origins};
use super::holders::{self, Holders};
use super::index::{Posting, Postings, SearchIndex};
use super::names::{hash, name_key};
use super::rows::{Gather, Rows};
use crate::registry::{Registry, ToolDef};

impl SearchIndex {
    /// Indexes one document per tool name ([`Registry::indexed`]: a global definition before an agent's own).
    pub fn build(registry: &Registry) -> Self {
        Self::build_frozen(registry, None)
    }

    /// What the index left unread of a registry larger than it reads, for the shell's log:
    /// `None` when it read every tool as far as it reads one.
    pub fn unread(&self) -> Option<String> {
        let builder = &self.growth.builder;
        let cut = builder.cut().map(|bytes| {
            format!(
                "the registry's tools and servers send more than {} MiB of text: each is read \
                 up to {bytes} bytes",
                super::documents::MAX_REGISTRY_TEXT_BYTES >> 20
            )
        });
        let full = builder.pieces_full.then(|| {
            format!(
                "the registry's text holds more than {} distinct words: the rest are not \
                 searched",
                super::documents::MAX_PIECES
            )
        });
        match (cut, full) {
            (Some(cut), Some(full)) => Some(format!("{cut}; {full}")),
            (cut, full) => cut.or(full),
        }
    }

    /// A full build; `frozen` sets the tool count and average field lengths instead of this
    /// registry's own (the ones an updated index keeps from its last full build).
    pub(super) fn build_frozen(registry: &Registry, frozen: Option<Frozen>) -> Self {
        let tools: Vec<&ToolDef> = registry.indexed_definitions().collect();
        let tools = crate::names::sorted_by_name(&tools, |t| &t.name);

        let mut builder = Builder::new();
        let mut table = GroupTable::default();
        let mut group_docs = Docs::default();
        let mut groups: Vec<u32> = Vec::with_capacity(tools.len());
        let doc_bytes = registry_doc_bytes(registry, tools.iter().copied());
        builder.read_at_most(doc_bytes);
        // Room for what is read, not for what was sent: a 100 KB description reads 32 KB.
        let text_bytes = tools.iter().map(|t| t.sent_bytes().min(doc_bytes)).sum();
        let mut docs = Docs::with_capacity(tools.len(), text_bytes);
        let mut text = ToolText::default();
        let mut origins = Origins::default();
        let mut exact: Vec<(u64, u32)> = Vec::with_capacity(2 * tools.len());
        for (doc, tool) in tools.iter().enumerate() {
            text.read(tool);
            exact_keys(&tool.name, text.own_name, doc as u32, &mut exact);
            let group = builder.group(registry, tool, &text, &mut table, &mut group_docs);
            groups.push(group);
            origins.add(tool);
            builder.tool(registry, tool, &text);
            builder.end_doc(&mut docs);
        }

        let frozen = frozen.unwrap_or_else(|| Frozen {
            tools: tools.len(),
            tool_average: average_lengths(&docs.lengths),
            group_average: average_lengths(&group_docs.lengths),
        });
        let terms = builder.texts.len();
        let mut frequency = vec![0u32; terms];
        for &(term, _) in docs.counts.iter().flatten() {
            frequency[term as usize] += 1;
        }
        let mut postings = Gather::new(&frequency);
        for (doc, (lengths, counts)) in docs.iter().enumerate() {
            for (term, score) in saturated(counts, lengths, &frozen.tool_average) {
                let doc = doc as u32;
                postings.push(term, Posting { doc, score });
            }
        }
        let postings = postings.finish();
        let mut group_tf: Rows<(u32, f32)> = Rows::default();
        for (lengths, counts) in group_docs.iter() {
            group_tf.push(saturated(counts, lengths, &frozen.group_average));
        }
        let group_postings = gather(&group_tf, 0, |_| false, terms);
        let members = members(&groups, group_docs.len(), &[]);
        let removed = vec![false; tools.len()];
        let holders = Holders {
            segments: [&postings, &Rows::default()],
            group_postings: &group_postings,
            members: &members,
            groups: &groups,
            removed: &removed,
        };
        let document_frequency: Vec<u32> = (0..terms as u32)
            .map(|term| holders.count_built(term) as u32)
            .collect();
        let mut idf: Vec<f32> = document_frequency
            .iter()
            .map(|&df| bm25::idf(frozen.tools, df as usize))
            .collect();
        for concept in 0..holders::concept_count() {
            holders::translated_idf(
                concept,
                &holders,
                frozen.tools,
                |t| builder.dictionary.term_id(t),
                |term, lower| idf[term as usize] = idf[term as usize].min(lower),
            );
        }

        // Gathered here rather than next to `group_tf`: two rows grown in turn leave buffers
        // the allocator cannot reuse (1 MB more linear memory at 10,000 tools).
        let doc_terms = term_lists(&docs.counts, Field::Name);
        let group_terms = term_lists(&group_docs.counts, Field::GroupName);
        let mut name_count = vec![0u32; terms];
        for &term in doc_terms
            .iter()
            .flatten()
            .chain(group_terms.iter().flatten())
        {
            if term & IN_NAME != 0 {
                name_count[(term & !IN_NAME) as usize] += 1;
            }
        }
        let name_terms: Vec<(Box<str>, u32)> = builder
            .texts
            .iter()
            .enumerate()
            .filter(|&(id, _)| name_count[id] > 0)
            .map(|(id, text)| (text.clone(), id as u32))
            .collect();
        exact.sort_unstable();
        exact.dedup();
        let mut group_live = vec![0u32; group_docs.len()];
        for &group in &groups {
            group_live[group as usize] += 1;
        }

        let built_group_items = group_tf.items_len();
        let built_pieces = builder.pieces();
        let built_size = postings.items_len() + built_group_items + built_pieces;
        let mut dictionary = std::mem::take(&mut builder.dictionary);
        dictionary.set_name_terms(name_terms);
        SearchIndex {
            names: tools.iter().map(|t| t.name.clone()).collect(),
            order: (0..tools.len() as u64).map(|doc| (doc + 1) << 32).collect(),
            removed,
            removed_count: 0,
            group_count: group_docs.len(),
            groups,
            name_words: docs.name_words,
            dictionary,
            idf,
            postings,
            added: Rows::default(),
            group_postings,
            exact,
            exact_added: Vec::new(),
            growth: Growth {
                builder,
                frozen,
                document_frequency,
                name_count,
                doc_terms,
                group_terms,
                group_tf,
                group_live,
                groups: table,
                origins,
                added_tf: Rows::default(),
                built: tools.len(),
                churn: 0,
                built_size,
                built_group_items,
                built_pieces,
                own_terms: Vec::new(),
                registered: registry
                    .groups()
                    .map(|g| (g.name.as_str().into(), hash(&g.description)))
                    .collect(),
                groups_revision: registry.groups_revision(),
            },
        }
    }
}

/// The live tools of each of `groups` groups.
pub(super) fn members(groups: &[u32], group_count: usize, removed: &[bool]) -> Rows<u32> {
    let mut sizes = vec![0; group_count];
    let live = |doc: usize| !removed.get(doc).copied().unwrap_or(false);
    for (doc, &group) in groups.iter().enumerate() {
        if live(doc) {
            sizes[group as usize] += 1;
        }
    }
    let mut members = Gather::new(&sizes);
    for (doc, &group) in groups.iter().enumerate() {
        if live(doc) {
            members.push(group, doc as u32);
        }
    }
    members.finish()
}

/// Term-major postings from document-major rows of (term, score): row `i` is document
/// `first + i`, left out when `skip` says so.
pub(super) fn gather(
    rows: &Rows<(u32, f32)>,
    first: u32,
    skip: impl Fn(u32) -> bool,
    terms: usize,
) -> Postings {
    let docs = || {
        rows.iter()
            .enumerate()
            .map(move |(i, row)| (first + i as u32, row))
            .filter(|&(doc, _)| !skip(doc))
    };
    let mut frequency = vec![0u32; terms];
    for (_, row) in docs() {
        for &(term, _) in row {
            frequency[term as usize] += 1;
        }
    }
    let mut postings = Gather::new(&frequency);
    for (doc, row) in docs() {
        for &(term, score) in row {
            postings.push(term, Posting { doc, score });
        }
    }
    postings.finish()
}

/// The keys under which a tool is found exactly: its whole `name`, what follows the name's last
/// `__`, and `own`, its own name as the search read it (all that follows its MCP server's
/// segment, [`ToolText::own_name`]).
pub(super) fn exact_keys(name: &str, own: &str, doc: u32, out: &mut Vec<(u64, u32)>) {
    out.push((name_key(name), doc));
    let last = own_name(name);
    if last.len() != name.len() {
        out.push((name_key(last), doc));
    }
    if own.len() != last.len() && own.len() != name.len() {
        out.push((name_key(own), doc));
    }
}

/// Per document, its terms, marked [`IN_NAME`] where `name_field` holds them.
fn term_lists(counts: &Rows<TermCounts>, name_field: Field) -> Rows<u32> {
    let mut lists = Rows::with_capacity(counts.len(), counts.items_len());
    for row in counts.iter() {
        lists.push(marked(row, name_field));
    }
    lists
}

/// Field lengths averaged over the documents that have text at all, or over those that hold
/// the field (see [`bm25::averaged_over_holders`]).
fn average_lengths(lengths: &[[u32; FIELD_COUNT]]) -> [f32; FIELD_COUNT] {
    let with_text = lengths.iter().filter(|l| l.iter().any(|&l| l > 0));
    let n = with_text.clone().count().max(1) as f32;
    let mut average = [0f32; FIELD_COUNT];
    for lengths in with_text {
        for (sum, &length) in average.iter_mut().zip(lengths) {
            *sum += length as f32 / n;
        }
    }
    for field in Field::ALL
        .into_iter()
        .filter(|&f| bm25::averaged_over_holders(f))
    {
        let at = field.index();
        let holders = lengths.iter().filter(|l| l[at] > 0).count();
        if holders > 0 {
            average[at] *= n / holders as f32;
        }
    }
    average
}
