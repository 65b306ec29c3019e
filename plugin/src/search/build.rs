//! Building the index from a registry: analyse every tool and group once, count terms per
//! field, then score each posting with BM25F (see `bm25`) so that a query only sums.

use rustc_hash::{FxHashMap, FxHashSet};

use super::analyze::{Piece, Scratch, analyzer};
use super::bm25;
use super::dictionary::Dictionary;
use super::fields::{FIELD_COUNT, Field, ToolText, group_of, own_name};
use super::index::{Posting, Postings, SearchIndex};
use super::names::{hash, normalise_name_into};
use super::rows::{Gather, Rows};
use super::vocab::{self, Language};
use crate::registry::{Enrichment, Registry, ToolDef};

impl SearchIndex {
    /// Indexes one document per tool name (the first definition wins).
    pub fn build(registry: &Registry) -> Self {
        let mut seen = FxHashSet::default();
        let mut tools: Vec<&ToolDef> = registry
            .tools()
            .iter()
            .filter(|t| seen.insert(t.name.as_str()))
            .collect();
        tools.sort_unstable_by(|a, b| a.name.cmp(&b.name));

        let mut builder = Builder::new();
        // A group's text is the same for all its tools: analysed and counted once, as a
        // document of its own. A tool of no group is a group of its own, without text.
        let mut group_ids: FxHashMap<&str, u32> = FxHashMap::default();
        let mut group_docs = Docs::default();
        let mut groups: Vec<u32> = Vec::with_capacity(tools.len());
        let mut docs = Docs::default();
        let mut text = ToolText::default();
        for tool in &tools {
            text.read(tool);
            let registered = group_of(registry, tool);
            let key = match registered {
                Some((name, _)) => name,
                None if text.namespace().next().is_some() => {
                    &tool.name[..tool.name.len() - text.own_name.len()]
                }
                None => tool.name.as_str(),
            };
            let next = group_ids.len() as u32;
            let group = *group_ids.entry(key).or_insert_with(|| {
                match registered {
                    Some((name, description)) => {
                        builder.add(name, &[Field::GroupName]);
                        builder.add(description, &[Field::GroupDescription]);
                    }
                    None => {
                        for segment in text.namespace() {
                            builder.add(segment, &[Field::GroupName]);
                        }
                    }
                }
                builder.end_doc(&mut group_docs);
                next
            });
            groups.push(group);

            builder.add(text.own_name, &[Field::Name]);
            builder.add(text.summary, &[Field::Summary, Field::Description]);
            builder.add(text.rest, &[Field::Description]);
            for name in &text.params.names {
                builder.add(name, &[Field::ParamNames]);
            }
            for description in &text.params.descriptions {
                builder.add(description, &[Field::ParamDescriptions]);
            }
            if let Some(extra) = registry.enrichment_of(&tool.name) {
                let Enrichment {
                    keywords,
                    examples,
                    descriptions,
                    ..
                } = extra;
                for text in keywords.iter().chain(examples).chain(descriptions) {
                    builder.add(text, &[Field::Enrichment]);
                }
            }
            builder.end_doc(&mut docs);
        }

        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let mut exact: Vec<(u64, u32)> = Vec::with_capacity(2 * tools.len());
        let mut buf = String::new();
        for (doc, tool) in tools.iter().enumerate() {
            let own = own_name(&tool.name);
            let names = [tool.name.as_str(), own];
            for name in &names[..if own.len() == tool.name.len() { 1 } else { 2 }] {
                normalise_name_into(name, &mut buf);
                exact.push((hash(&buf), doc as u32));
            }
        }
        exact.sort_unstable();
        exact.dedup();
        builder.finish(names, groups, docs, group_docs, exact)
    }
}

/// Documents' terms while the index is built: tools, or groups.
#[derive(Debug, Default)]
struct Docs {
    /// Per document, its terms in each field, counted the way BM25 counts document length.
    lengths: Vec<[u32; FIELD_COUNT]>,
    /// Per document, one entry per term with its count in each field.
    counts: Rows<(u32, [u16; FIELD_COUNT])>,
    /// Per document, the word terms of its own name, in order (tools only).
    name_words: Rows<u32>,
}

impl Docs {
    fn len(&self) -> usize {
        self.lengths.len()
    }
}

/// The document being analysed.
#[derive(Debug, Default)]
struct Doc {
    /// Which document this is, for [`Builder::seen`]; ids start at 1.
    id: u32,
    lengths: [u32; FIELD_COUNT],
    /// One entry per term, in order of first occurrence.
    counts: Vec<(u32, [u16; FIELD_COUNT])>,
    name_words: Vec<u32>,
}

/// Interns terms while tools are analysed, and counts them in the document being analysed.
#[derive(Debug, Default)]
struct Builder {
    terms: FxHashMap<Box<str>, u32>,
    texts: Vec<Box<str>>,
    scratch: Scratch,
    /// Lowercase word or CJK gram -> its term (None: a stop word), so each distinct word is
    /// stemmed and looked up once.
    words: FxHashMap<Box<str>, Option<u32>>,
    /// Per term, the last document that holds it and the term's place in that document's
    /// counts: an occurrence is counted in place, with no per-document map or sort.
    seen: Vec<(u32, u32)>,
    doc: Doc,
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
        if let Some(&id) = self.terms.get(term) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.terms.insert(term.into(), id);
        self.texts.push(term.into());
        self.seen.push((0, 0));
        id
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
    fn end_doc(&mut self, docs: &mut Docs) {
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
                Some(&known) => known,
                None => {
                    let term = match piece {
                        Piece::Word { lower, .. } => {
                            analyzer.word_term(lower).map(|t| self.intern(&t))
                        }
                        Piece::Cjk { gram, .. } => {
                            analyzer.keeps_cjk(gram).then(|| self.intern(gram))
                        }
                    };
                    self.words.insert(text.into(), term);
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

    /// Each term's inverse document frequency over tools (a group's term is in all its
    /// tools), where a vocabulary word counts every tool that holds it or one of its
    /// translations: `获取` ("get") is rare in a mostly English catalog, but what it means is
    /// not, and it must not outweigh the rare words of a query.
    fn idf(&self, holders: &Holders<'_>) -> Vec<f32> {
        let n = holders.tools();
        let idf = |df: usize| bm25::idf(n, df);
        let mut out: Vec<f32> = (0..self.texts.len() as u32)
            .map(|term| idf(holders.count(term)))
            .collect();
        for forms in vocab::built_in().concept_forms() {
            // The tools holding each form, by language.
            let mut by_language = [ToolSet::new(holders.tools()), ToolSet::new(holders.tools())];
            let mut single_terms: Vec<(u32, Language, ToolSet)> = Vec::new();
            for form in forms {
                let Some(ids) = form
                    .terms
                    .iter()
                    .map(|t| self.terms.get(t.as_str()).copied())
                    .collect::<Option<Vec<u32>>>()
                else {
                    continue;
                };
                // Tools holding every term of the form.
                let mut tools = holders.set(ids[0]);
                for &id in &ids[1..] {
                    tools.intersect(&holders.set(id));
                }
                by_language[form.language as usize].unite(&tools);
                if let [single] = ids.as_slice() {
                    single_terms.push((*single, form.language, tools));
                }
            }
            for (term, language, own) in single_terms {
                let translations = &by_language[1 - language as usize];
                let df = own.union_len(translations);
                out[term as usize] = out[term as usize].min(idf(df));
            }
        }
        out
    }

    fn finish(
        self,
        names: Vec<String>,
        groups: Vec<u32>,
        docs: Docs,
        group_docs: Docs,
        exact: Vec<(u64, u32)>,
    ) -> SearchIndex {
        let terms = self.texts.len();
        let mut in_names = vec![false; terms];
        let mut postings = weighted_frequencies(&docs, terms, Field::Name, &mut in_names);
        let mut group_postings =
            weighted_frequencies(&group_docs, terms, Field::GroupName, &mut in_names);
        let mut sizes = vec![0; group_docs.len()];
        for &group in &groups {
            sizes[group as usize] += 1;
        }
        let mut members = Gather::new(&sizes);
        for (doc, &group) in groups.iter().enumerate() {
            members.push(group, doc as u32);
        }
        let members = members.finish();
        let idf = self.idf(&Holders {
            postings: &postings,
            group_postings: &group_postings,
            members: &members,
            groups: &groups,
        });
        for list in [&mut postings, &mut group_postings] {
            for (term_postings, &idf) in list.iter_mut().zip(&idf) {
                for posting in term_postings {
                    posting.score = bm25::score(idf, posting.score);
                }
            }
        }

        let name_terms: Vec<(Box<str>, u32)> = self
            .texts
            .iter()
            .enumerate()
            .filter(|&(id, _)| in_names[id])
            .map(|(id, text)| (text.clone(), id as u32))
            .collect();
        SearchIndex {
            names,
            groups,
            group_count: group_docs.len(),
            name_words: docs.name_words,
            dictionary: Dictionary::new(self.terms, name_terms),
            postings,
            group_postings,
            exact,
        }
    }
}

/// Per term, each document's weighted, length-normalised term frequency (BM25F); the score
/// comes once every term's document frequency is known. Terms found in `name_field` are
/// marked in `in_names`.
fn weighted_frequencies(
    docs: &Docs,
    terms: usize,
    name_field: Field,
    in_names: &mut [bool],
) -> Postings {
    // Field lengths are averaged over the documents that have text at all.
    let with_text = docs.lengths.iter().filter(|l| l.iter().any(|&l| l > 0));
    let n = with_text.clone().count().max(1) as f32;
    let mut average = [0f32; FIELD_COUNT];
    for lengths in with_text {
        for (sum, &length) in average.iter_mut().zip(lengths) {
            *sum += length as f32 / n;
        }
    }
    let mut frequency = vec![0u32; terms];
    for &(term, counts) in docs.counts.iter().flatten() {
        frequency[term as usize] += 1;
        if counts[name_field.index()] > 0 {
            in_names[term as usize] = true;
        }
    }
    // Plain loops: iterator adapters are not all inlined in the size-optimised component.
    let mut postings = Gather::new(&frequency);
    for (doc, (lengths, counts)) in docs.lengths.iter().zip(docs.counts.iter()).enumerate() {
        let mut norms = [0f32; FIELD_COUNT];
        for (i, field) in Field::ALL.iter().enumerate() {
            norms[i] = bm25::field_norm(*field, lengths[i], average[i]);
        }
        for &(term, counts) in counts {
            let mut tf = 0.0;
            for (count, norm) in counts.into_iter().zip(norms) {
                tf += count as f32 * norm;
            }
            let doc = doc as u32;
            postings.push(term, Posting { doc, score: tf });
        }
    }
    postings.finish()
}

/// Which tools hold a term, in their own text or through their group's.
struct Holders<'a> {
    postings: &'a Postings,
    group_postings: &'a Postings,
    members: &'a Rows<u32>,
    /// The group of each tool.
    groups: &'a [u32],
}

impl Holders<'_> {
    /// How many tools hold `term`.
    fn count(&self, term: u32) -> usize {
        let own = &self.postings[term as usize];
        let in_groups = &self.group_postings[term as usize];
        if in_groups.is_empty() {
            return own.len();
        }
        let through_groups: usize = in_groups
            .iter()
            .map(|p| self.members[p.doc as usize].len())
            .sum();
        // Tools that hold it both ways count once; group postings are sorted by group.
        let both = own
            .iter()
            .filter(|p| {
                let group = self.groups[p.doc as usize];
                in_groups.binary_search_by_key(&group, |g| g.doc).is_ok()
            })
            .count();
        own.len() + through_groups - both
    }

    fn tools(&self) -> usize {
        self.groups.len()
    }

    /// The tools that hold `term`.
    fn set(&self, term: u32) -> ToolSet {
        let mut set = ToolSet::new(self.tools());
        for posting in &self.postings[term as usize] {
            set.insert(posting.doc);
        }
        for posting in &self.group_postings[term as usize] {
            for &tool in &self.members[posting.doc as usize] {
                set.insert(tool);
            }
        }
        set
    }
}

/// A set of tools, a bit each: the vocabulary's document frequencies unite and intersect the
/// sets of many common words.
struct ToolSet(Vec<u64>);

impl ToolSet {
    fn new(tools: usize) -> Self {
        Self(vec![0; tools.div_ceil(64)])
    }

    fn insert(&mut self, tool: u32) {
        self.0[tool as usize / 64] |= 1 << (tool % 64);
    }

    fn intersect(&mut self, other: &Self) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word &= other;
        }
    }

    fn unite(&mut self, other: &Self) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }

    /// How many tools are in this set or in `other`.
    fn union_len(&self, other: &Self) -> usize {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a | b).count_ones() as usize)
            .sum()
    }
}
