//! Building the index from a registry: analyse every tool and group once, count terms per
//! field, saturate each posting's weighted frequency with BM25F (see `bm25`) and compute each
//! term's idf, so that a query only multiplies and sums. `update` grows the index with the
//! same analysis.

use rustc_hash::FxHashMap;

use super::analyze::{Piece, Scratch, analyzer};
use super::bm25;
use super::dictionary::Dictionary;
use super::fields::{FIELD_COUNT, Field, ToolText, group_of, own_name};
use super::holders::{self, Holders};
use super::index::{Posting, Postings, SearchIndex};
use super::names::{hash, name_key};
use super::rows::{Gather, Rows};
use super::update::{Frozen, GroupTable, Growth};
use super::word_terms::WordTerms;
use crate::registry::{Enrichment, Origin, Registry, ToolDef};

/// Marks a term of a tool's own name (or of a group's name) in a document's term list.
pub(super) const IN_NAME: u32 = 1 << 31;

impl SearchIndex {
    /// Indexes one document per tool name (the first definition wins).
    pub fn build(registry: &Registry) -> Self {
        Self::build_frozen(registry, None)
    }

    /// A full build; `frozen` sets the tool count and average field lengths instead of this
    /// registry's own (the ones an updated index keeps from its last full build).
    pub(super) fn build_frozen(registry: &Registry, frozen: Option<Frozen>) -> Self {
        let mut tools: Vec<&ToolDef> = registry.first_definitions().collect();
        tools.sort_unstable_by(|a, b| crate::names::compare(&a.name, &b.name));

        let mut builder = Builder::new();
        let mut table = GroupTable::default();
        let mut group_docs = Docs::default();
        let mut groups: Vec<u32> = Vec::with_capacity(tools.len());
        let mut docs = Docs::default();
        let mut text = ToolText::default();
        let mut origins = Origins::default();
        for tool in &tools {
            text.read(tool);
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
        let mut group_terms: Rows<u32> = Rows::default();
        for (lengths, counts) in group_docs.iter() {
            push_document(
                lengths,
                counts,
                &frozen.group_average,
                Field::GroupName,
                &mut group_tf,
                &mut group_terms,
            );
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

        let mut doc_terms: Rows<u32> = Rows::default();
        for counts in docs.counts.iter() {
            doc_terms.push(marked(counts, Field::Name));
        }
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
        let mut exact: Vec<(u64, u32)> = Vec::with_capacity(2 * tools.len());
        for (doc, tool) in tools.iter().enumerate() {
            exact_keys(&tool.name, doc as u32, &mut exact);
        }
        exact.sort_unstable();
        exact.dedup();
        let mut group_live = vec![0u32; group_docs.len()];
        for &group in &groups {
            group_live[group as usize] += 1;
        }

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
                registered: registry
                    .groups()
                    .map(|g| (g.name.as_str().into(), hash(&g.description)))
                    .collect(),
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

/// The keys under which a tool's whole name and own name are found exactly.
pub(super) fn exact_keys(name: &str, doc: u32, out: &mut Vec<(u64, u32)>) {
    let own = own_name(name);
    let names = [name, own];
    for name in &names[..if own.len() == name.len() { 1 } else { 2 }] {
        out.push((name_key(name), doc));
    }
}

/// A document's terms, marked [`IN_NAME`] where `name_field` holds them.
fn marked(
    counts: &[(u32, [u16; FIELD_COUNT])],
    name_field: Field,
) -> impl Iterator<Item = u32> + '_ {
    counts.iter().map(move |&(term, counts)| {
        if counts[name_field.index()] > 0 {
            term | IN_NAME
        } else {
            term
        }
    })
}

/// Appends a document's saturated frequencies (BM25F against `average`) to `tf`, and its
/// terms, marked where `name_field` holds them, to `terms`: what an update keeps of a group,
/// or of a tool it adds.
pub(super) fn push_document(
    lengths: &[u32; FIELD_COUNT],
    counts: &[(u32, [u16; FIELD_COUNT])],
    average: &[f32; FIELD_COUNT],
    name_field: Field,
    tf: &mut Rows<(u32, f32)>,
    terms: &mut Rows<u32>,
) {
    tf.push(saturated(counts, lengths, average));
    terms.push(marked(counts, name_field));
}

/// Field lengths averaged over the documents that have text at all.
fn average_lengths(lengths: &[[u32; FIELD_COUNT]]) -> [f32; FIELD_COUNT] {
    let with_text = lengths.iter().filter(|l| l.iter().any(|&l| l > 0));
    let n = with_text.clone().count().max(1) as f32;
    let mut average = [0f32; FIELD_COUNT];
    for lengths in with_text {
        for (sum, &length) in average.iter_mut().zip(lengths) {
            *sum += length as f32 / n;
        }
    }
    average
}

/// Each term of one document with its weighted, length-normalised, saturated frequency
/// (BM25F without the idf).
fn saturated<'a>(
    counts: &'a [(u32, [u16; FIELD_COUNT])],
    lengths: &[u32; FIELD_COUNT],
    average: &[f32; FIELD_COUNT],
) -> impl Iterator<Item = (u32, f32)> + 'a {
    let mut norms = [0f32; FIELD_COUNT];
    for (i, field) in Field::ALL.iter().enumerate() {
        norms[i] = bm25::field_norm(*field, lengths[i], average[i]);
    }
    // Plain loops: iterator adapters are not all inlined in the size-optimised component.
    counts.iter().map(move |&(term, counts)| {
        let mut tf = 0.0;
        for (count, norm) in counts.into_iter().zip(norms) {
            tf += count as f32 * norm;
        }
        (term, bm25::saturate(tf))
    })
}

/// How many live tools each MCP server (a tool's origin) has in the index: a group the shell
/// describes anew changes the text of exactly these.
#[derive(Debug, Default)]
pub(super) struct Origins {
    ids: FxHashMap<Box<str>, u32>,
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

/// Documents' terms while the index is built: tools, or groups.
#[derive(Debug, Default)]
pub(super) struct Docs {
    /// Per document, its terms in each field, counted the way BM25 counts document length.
    pub lengths: Vec<[u32; FIELD_COUNT]>,
    /// Per document, one entry per term with its count in each field.
    pub counts: Rows<(u32, [u16; FIELD_COUNT])>,
    /// Per document, the word terms of its own name, in order (tools only).
    pub name_words: Rows<u32>,
}

impl Docs {
    fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Each document's field lengths and term counts.
    pub fn iter(
        &self,
    ) -> impl Iterator<Item = (&[u32; FIELD_COUNT], &[(u32, [u16; FIELD_COUNT])])> {
        self.lengths.iter().zip(self.counts.iter())
    }
}

/// The document being analysed.
#[derive(Debug, Default)]
pub(super) struct Doc {
    /// Which document this is, for [`Builder::seen`]; ids start at 1.
    id: u32,
    pub lengths: [u32; FIELD_COUNT],
    /// One entry per term, in order of first occurrence.
    pub counts: Vec<(u32, [u16; FIELD_COUNT])>,
    pub name_words: Vec<u32>,
}

/// Interns terms while tools are analysed, and counts them in the document being analysed.
/// It outlives the full build: an update analyses new tools with it.
#[derive(Debug, Default)]
pub(super) struct Builder {
    /// Every term ever interned (an update may remove the last tool holding one; the
    /// dictionary then hides it).
    pub dictionary: Dictionary,
    pub texts: Vec<Box<str>>,
    scratch: Scratch,
    /// Lowercase word or CJK gram -> its term (None: a stop word), so each distinct word is
    /// stemmed and looked up once.
    words: WordTerms,
    /// Per term, the last document that holds it and the term's place in that document's
    /// counts: an occurrence is counted in place, with no per-document map or sort.
    seen: Vec<(u32, u32)>,
    pub doc: Doc,
}

impl Builder {
    fn new() -> Self {
        Self {
            doc: Doc {
                id: 1,
                ..Doc::default()
            },
            ..Self::default()
        }
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(id) = self.dictionary.any_term_id(term) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.dictionary.insert(term.into(), id);
        self.texts.push(term.into());
        self.seen.push((0, 0));
        id
    }

    /// The group (MCP server) of `tool` in `table`; a new one is analysed into `docs`. A
    /// group's text is the same for all its tools: analysed and counted once, as a document of
    /// its own. A tool of no group is a group of its own, without text.
    pub fn group(
        &mut self,
        registry: &Registry,
        tool: &ToolDef,
        text: &ToolText<'_>,
        table: &mut GroupTable,
        docs: &mut Docs,
    ) -> u32 {
        let registered = group_of(registry, tool);
        let key = match registered {
            Some((name, _)) => name,
            None if text.namespace().next().is_some() => {
                &tool.name[..tool.name.len() - text.own_name.len()]
            }
            None => tool.name.as_str(),
        };
        if let Some(group) = table.get(key) {
            return group;
        }
        match registered {
            Some((name, description)) => {
                self.add(name, &[Field::GroupName]);
                self.add(description, &[Field::GroupDescription]);
            }
            None => {
                for segment in text.namespace() {
                    self.add(segment, &[Field::GroupName]);
                }
            }
        }
        self.end_doc(docs);
        table.insert(key, registered.map(|(_, description)| hash(description)))
    }

    /// Analyses `tool` (its `text` read) as the document being analysed.
    pub fn tool(&mut self, registry: &Registry, tool: &ToolDef, text: &ToolText<'_>) {
        self.add(text.own_name, &[Field::Name]);
        self.add(text.summary, &[Field::Summary, Field::Description]);
        self.add(text.rest, &[Field::Description]);
        for name in &text.params.names {
            self.add(name, &[Field::ParamNames]);
        }
        for description in &text.params.descriptions {
            self.add(description, &[Field::ParamDescriptions]);
        }
        if let Some(extra) = registry.enrichment_of(&tool.name) {
            let Enrichment {
                keywords,
                examples,
                descriptions,
                ..
            } = extra;
            for text in keywords.iter().chain(examples).chain(descriptions) {
                self.add(text, &[Field::Enrichment]);
            }
        }
    }

    /// Counts one occurrence of `term` in `field` of the document being analysed.
    fn count(&mut self, term: u32, field: Field) {
        let doc = &mut self.doc;
        let seen = &mut self.seen[term as usize];
        if seen.0 != doc.id {
            *seen = (doc.id, doc.counts.len() as u32);
            doc.counts.push((term, [0; FIELD_COUNT]));
        }
        let count = &mut doc.counts[seen.1 as usize].1[field.index()];
        *count = count.saturating_add(1);
    }

    /// Moves the document being analysed to `docs`; the next one starts empty.
    pub fn end_doc(&mut self, docs: &mut Docs) {
        let doc = &mut self.doc;
        docs.lengths.push(std::mem::take(&mut doc.lengths));
        docs.counts.push(doc.counts.drain(..));
        docs.name_words.push(doc.name_words.drain(..));
        doc.id += 1;
    }

    /// Adds the terms of `text` to the document being analysed, counted in each of `fields`.
    fn add(&mut self, text: &str, fields: &[Field]) {
        let analyzer = analyzer();
        let mut scratch = std::mem::take(&mut self.scratch);
        analyzer.for_each_piece_in(&mut scratch, text, |piece| {
            let text = match piece {
                Piece::Word { lower, .. } => lower,
                Piece::Cjk { gram, .. } => gram,
            };
            let term = match self.words.get(text) {
                Some(known) => known,
                None => {
                    let term = match piece {
                        Piece::Word { lower, .. } => {
                            analyzer.word_term(lower).map(|t| self.intern(&t))
                        }
                        Piece::Cjk { gram, .. } => {
                            analyzer.keeps_cjk(gram).then(|| self.intern(gram))
                        }
                    };
                    self.words.insert(text, term);
                    term
                }
            };
            let Some(term) = term else { return };
            for &field in fields {
                if field == Field::Name && matches!(piece, Piece::Word { whole: false, .. }) {
                    self.doc.name_words.push(term);
                }
                self.count(term, field);
                // A CJK unigram repeats what its bigrams say; it is not counted as length.
                if !matches!(piece, Piece::Cjk { bigram: false, .. }) {
                    self.doc.lengths[field.index()] += 1;
                }
            }
        });
        self.scratch = scratch;
    }
}
