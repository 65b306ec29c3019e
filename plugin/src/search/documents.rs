//! Tools and groups analysed into documents: each term counted per field as BM25F counts it,
//! interned once. The full build analyses every tool with a [`Builder`]; an update keeps it
//! and analyses the tools it adds with the same one.

use crate::keyed_hash::KeyedMap;

use super::analyze::{Analyzer, Piece, PieceSink, Scratch, analyzer};
use super::bm25;
use super::dictionary::Dictionary;
use super::fields::{FIELD_COUNT, Field, ToolText, group_of};
use super::initials;
use super::names::hash;
use super::rows::Rows;
use super::word_terms::WordTerms;
use crate::registry::{Enrichment, Registry, ToolDef, ToolGroup};

/// Marks a term of a tool's own name (or of a group's name) in a document's term list.
pub(super) const IN_NAME: u32 = 1 << 31;

/// A group's key, in one of three key spaces: a tool named like a server (a builtin `github`)
/// must not take the place of that server's described group.
#[derive(Debug, Clone, Copy)]
pub(super) enum GroupKey<'a> {
    /// A group the registry describes (an MCP server), by name.
    Described(&'a str),
    /// The namespace of tools of no described group (`ns__` of `ns__tool`).
    Namespace(&'a str),
    /// A tool of neither, by its whole name: a group of its own, without text.
    Alone(&'a str),
}

impl<'a> GroupKey<'a> {
    fn split(self) -> (usize, &'a str) {
        match self {
            Self::Described(key) => (0, key),
            Self::Namespace(key) => (1, key),
            Self::Alone(key) => (2, key),
        }
    }
}

/// Groups by key, with a hash of the description they were indexed with (`None`: not
/// described).
#[derive(Debug, Default)]
pub(super) struct GroupTable {
    /// Per key space (see [`GroupKey`]), keys and their groups.
    keys: [KeyedMap<Box<str>, u32>; 3],
    described: Vec<Option<u64>>,
}

impl GroupTable {
    pub fn get(&self, key: GroupKey<'_>) -> Option<u32> {
        let (space, key) = key.split();
        self.keys[space].get(key).copied()
    }

    pub fn insert(&mut self, key: GroupKey<'_>, described: Option<u64>) -> u32 {
        let id = self.described.len() as u32;
        let (space, key) = key.split();
        self.keys[space].insert(key.into(), id);
        self.described.push(described);
        id
    }

    pub fn described(&self, group: u32) -> Option<u64> {
        self.described.get(group as usize).copied().flatten()
    }
}

/// A term of a document and how often each field holds it, up to 255: BM25 saturates a
/// term's frequency long before that (255 and 1,000 occurrences score within 0.1%), and a
/// byte per field keeps an index build's counts at 12 bytes a term instead of 20 (in the
/// component, fewer fresh pages touched).
pub(super) type TermCounts = (u32, [u8; FIELD_COUNT]);

/// Text bytes per distinct term of a document, for reserving room: the bundled catalogs have
/// 22; fewer, so that a full build allocates its counts once.
const BYTES_PER_TERM: usize = 16;

/// Text indexed per text of a document (a name, a description, a parameter's description,
/// an enrichment text) and per document (a tool with all its texts, or a group): the rest is
/// not read. A 3 MB description of distinct CJK characters took 250 MB and a second to index;
/// the longest of the bundled and API catalogs are a 7 KB description and an 11 KB tool, so
/// no ranking of theirs changes.
pub(super) const MAX_TEXT_BYTES: usize = 32 << 10;
pub(super) const MAX_DOC_BYTES: usize = 64 << 10;
const _: () = assert!(super::schema::MAX_PARAMS_BYTES >= MAX_DOC_BYTES);

/// The text an index reads of all tools and groups together, each tool's name, description,
/// schema and enrichment, and each group's name and description, counted as the shell sent
/// them (more than is read of a schema). Past it, each document reads the same share at most
/// ([`registry_doc_bytes`]): a registry of a thousand 32 KB descriptions took the component's
/// memory to 261 MB, past the 256 MiB a shell gives it, and so did 3,000 tools of a word's
/// description each with 64 KB of enrichment. Ten thousand tools of the bundled catalog's or
/// the API catalog's sizes send 6.7 MB and 5.6 MB.
pub(super) const MAX_REGISTRY_TEXT_BYTES: usize = 16 << 20;
/// What a tool reads of its text however large the registry: its name and description's
/// beginning.
const MIN_DOC_BYTES: usize = 1 << 10;
/// The distinct pieces of text (words, CJK grams) an index meets; a piece met after them
/// counts nothing. Each costs some 200 bytes with its term: 250 tools of 32 KB of words
/// of their own took the component's memory to 296 MB. The bundled catalog meets 5,800
/// pieces, the API catalog's 2,825 tools 9,400.
pub(super) const MAX_PIECES: usize = 1 << 18;

/// The bytes each document of `registry` reads at most ([`doc_bytes_within`]): its tools
/// (`tools`, each name's indexed definition) with their enrichment, and its described groups,
/// whose names and descriptions the index reads as documents of their own.
pub(super) fn registry_doc_bytes<'a>(
    registry: &'a Registry,
    tools: impl Iterator<Item = &'a ToolDef>,
) -> usize {
    if registry.sent_bytes() <= MAX_REGISTRY_TEXT_BYTES {
        // All of it fits, whichever definitions are indexed: no need to count tool by tool.
        return MAX_DOC_BYTES;
    }
    let enrichment =
        |tool: &ToolDef| (registry.enrichment_of(&tool.name)).map_or(0, Enrichment::sent_bytes);
    let tools = tools.map(|tool| tool.sent_bytes() + enrichment(tool));
    let groups = registry.groups().map(ToolGroup::sent_bytes);
    doc_bytes_within(tools.chain(groups))
}

/// The bytes each document reads at most so that documents of `lengths` bytes read at most
/// [`MAX_REGISTRY_TEXT_BYTES`] in all: [`MAX_DOC_BYTES`] when they fit, else the largest share
/// that fits, which a shorter document reads whole (never below [`MIN_DOC_BYTES`]).
pub(super) fn doc_bytes_within(lengths: impl Iterator<Item = usize>) -> usize {
    let mut lengths: Vec<usize> = lengths.map(|len| len.min(MAX_DOC_BYTES)).collect();
    if lengths.iter().sum::<usize>() <= MAX_REGISTRY_TEXT_BYTES {
        return MAX_DOC_BYTES;
    }
    lengths.sort_unstable();
    let mut left = MAX_REGISTRY_TEXT_BYTES;
    for (i, &len) in lengths.iter().enumerate() {
        let share = left / (lengths.len() - i);
        if len > share {
            return share.max(MIN_DOC_BYTES);
        }
        left -= len;
    }
    MAX_DOC_BYTES
}

/// A document's read of at most `bytes`, as a cut: none when that is all a document reads.
fn cut_at(bytes: usize) -> Option<usize> {
    (bytes < MAX_DOC_BYTES).then_some(bytes)
}

/// Documents' terms while the index is built: tools, or groups.
#[derive(Debug, Default)]
pub(super) struct Docs {
    /// Per document, its terms in each field, counted the way BM25 counts document length.
    pub lengths: Vec<[u32; FIELD_COUNT]>,
    /// Per document, one entry per term with its count in each field.
    pub counts: Rows<TermCounts>,
    /// Per document, the word terms of its own name, in order (tools only).
    pub name_words: Rows<u32>,
}

impl Docs {
    /// Room for `docs` documents of about `text_bytes` bytes of text in all.
    pub fn with_capacity(docs: usize, text_bytes: usize) -> Self {
        Self {
            lengths: Vec::with_capacity(docs),
            counts: Rows::with_capacity(docs, text_bytes / BYTES_PER_TERM),
            // A tool's own name is a few words.
            name_words: Rows::with_capacity(docs, 4 * docs),
        }
    }

    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Each document's field lengths and term counts.
    pub fn iter(&self) -> impl Iterator<Item = (&[u32; FIELD_COUNT], &[TermCounts])> {
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
    pub counts: Vec<TermCounts>,
    pub name_words: Vec<u32>,
    /// Bytes of text read into this document, up to [`MAX_DOC_BYTES`] or [`Builder::cut`].
    read: usize,
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
    /// The bytes a document reads at most when a registry past [`MAX_REGISTRY_TEXT_BYTES`]
    /// cut them below [`MAX_DOC_BYTES`] (the tools an update adds read as much); `None`: not
    /// cut (a default builder reads as a new one does).
    cut: Option<usize>,
    /// Whether a piece of text went uncounted because [`MAX_PIECES`] were met.
    pub pieces_full: bool,
}

impl Builder {
    pub fn new() -> Self {
        Self {
            doc: Doc {
                id: 1,
                ..Doc::default()
            },
            ..Self::default()
        }
    }

    /// Each document reads at most `bytes` of its text from now on.
    pub fn read_at_most(&mut self, bytes: usize) {
        self.cut = cut_at(bytes);
    }

    /// Whether each document reads at most `bytes` of its text, as [`Builder::read_at_most`]
    /// set it.
    pub fn reads_at_most(&self, bytes: usize) -> bool {
        self.cut == cut_at(bytes)
    }

    /// The bytes a document reads at most, when a registry's size cut it below
    /// [`MAX_DOC_BYTES`].
    pub fn cut(&self) -> Option<usize> {
        self.cut
    }

    /// How many distinct pieces of text it has met (each kept with its term).
    pub fn pieces(&self) -> usize {
        self.words.len()
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
            Some((name, _)) => GroupKey::Described(name),
            None if text.namespace().next().is_some() => {
                GroupKey::Namespace(&tool.name[..tool.name.len() - text.own_name.len()])
            }
            None => GroupKey::Alone(tool.name.as_str()),
        };
        if let Some(group) = table.get(key) {
            return group;
        }
        match registered {
            Some((name, description)) => {
                self.add(name, &[Field::GroupName]);
                self.add(description, &[Field::GroupDescription]);
                self.add_initials(name, description);
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
        // The description is one text: its first sentence and the rest.
        let rest = MAX_TEXT_BYTES.saturating_sub(text.summary.len());
        self.add_within(text.rest, rest, &[Field::Description]);
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

    /// The term of a piece met for the first time in this build (`None`: a stop word).
    fn first_meeting(&mut self, analyzer: &Analyzer, piece: Piece<'_>) -> Option<u32> {
        if self.words.len() >= MAX_PIECES {
            self.pieces_full = true;
            return None;
        }
        let (text, term) = match piece {
            Piece::Word { lower, .. } => {
                (lower, analyzer.word_term(lower).map(|t| self.intern(&t)))
            }
            Piece::Cjk { gram, .. } => (gram, analyzer.keeps_cjk(gram).then(|| self.intern(gram))),
        };
        self.words.insert(text, term);
        term
    }

    /// Counts the initials of the names a group's name and description write in the group's
    /// name, each once, as what the group is called, but not as its length: they say its name
    /// again.
    fn add_initials(&mut self, name: &str, description: &str) {
        let mut all = initials::of_names(within(name));
        all.extend(initials::of_names(within(description)));
        all.sort_unstable();
        all.dedup();
        for initials in all {
            let term = self.intern(initials.term());
            self.count(term, Field::GroupName);
        }
    }

    /// Counts `term`, read from `piece`, in `field` of the document being analysed.
    #[inline(always)]
    fn count_in(&mut self, term: u32, field: Field, piece: Piece<'_>) {
        if field == Field::Name && matches!(piece, Piece::Word { whole: false, .. }) {
            self.doc.name_words.push(term);
        }
        self.count(term, field);
        // A CJK unigram repeats what its bigrams say; it is not counted as length.
        if !matches!(piece, Piece::Cjk { bigram: false, .. }) {
            self.doc.lengths[field.index()] += 1;
        }
    }

    /// Counts one occurrence of `term` in `field` of the document being analysed.
    #[inline(always)]
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
        doc.read = 0;
        doc.id += 1;
    }

    /// Adds the terms of `text` to the document being analysed, counted in each of `fields`.
    fn add(&mut self, text: &str, fields: &[Field]) {
        self.add_within(text, MAX_TEXT_BYTES, fields);
    }

    /// [`Builder::add`] of the first `max` bytes of `text` at most, and no more than the
    /// document has room for (cut at a character boundary).
    fn add_within(&mut self, text: &str, max: usize, fields: &[Field]) {
        let room = (self.cut.unwrap_or(MAX_DOC_BYTES)).saturating_sub(self.doc.read);
        let text = &text[..text.floor_char_boundary(max.min(room))];
        self.doc.read += text.len();
        let Some((&first, more)) = fields.split_first() else {
            return;
        };
        let analyzer = analyzer();
        let mut scratch = std::mem::take(&mut self.scratch);
        analyzer.for_each_piece_in(
            &mut scratch,
            text,
            Counter {
                builder: self,
                analyzer,
                first,
                more,
            },
        );
        self.scratch = scratch;
    }
}

/// Counts each piece of a text in the document being analysed.
struct Counter<'b> {
    builder: &'b mut Builder,
    analyzer: &'static Analyzer,
    /// The fields the text counts in: most text counts in one, handled before any loop (in the
    /// component every loop entered checks the epoch deadline).
    first: Field,
    more: &'b [Field],
}

impl PieceSink for Counter<'_> {
    #[inline(always)]
    fn piece(&mut self, piece: Piece<'_>) {
        let builder = &mut *self.builder;
        let text = match piece {
            Piece::Word { lower, .. } => lower,
            Piece::Cjk { gram, .. } => gram,
        };
        let term = match builder.words.get(text) {
            Some(known) => known,
            None => builder.first_meeting(self.analyzer, piece),
        };
        let Some(term) = term else { return };
        builder.count_in(term, self.first, piece);
        for &field in self.more {
            builder.count_in(term, field, piece);
        }
    }
}

/// The part of `text` a document reads: its first [`MAX_TEXT_BYTES`], cut at a character.
fn within(text: &str) -> &str {
    &text[..text.floor_char_boundary(MAX_TEXT_BYTES)]
}

/// A document's terms, marked [`IN_NAME`] where `name_field` holds them.
pub(super) fn marked(counts: &[TermCounts], name_field: Field) -> impl Iterator<Item = u32> + '_ {
    counts.iter().map(move |&(term, counts)| {
        if counts[name_field.index()] > 0 {
            term | IN_NAME
        } else {
            term
        }
    })
}

/// Each term of one document with its weighted, length-normalised, saturated frequency
/// (BM25F without the idf).
pub(super) fn saturated<'a>(
    counts: &'a [TermCounts],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Origin, ToolGroup};
    use crate::search::SearchIndex;

    fn tool(name: &str, description: String, parameters: String) -> ToolDef {
        ToolDef {
            name: format!("srv__{name}"),
            description,
            parameters,
            origin: Origin::Mcp("srv".into()),
        }
    }

    /// A registry within the budget reads each tool as far as a tool is read; past it, the
    /// largest share that fits, which shorter tools read whole, and never less than a name and
    /// a description's beginning.
    #[test]
    fn a_registrys_text_budget_is_shared_evenly() {
        assert_eq!(
            doc_bytes_within(std::iter::repeat_n(1_000, 100)),
            MAX_DOC_BYTES
        );
        // Each counted as far as it is read: 256 tools of a megabyte fit.
        assert_eq!(
            doc_bytes_within(std::iter::repeat_n(1 << 20, 256)),
            MAX_DOC_BYTES
        );
        let share = doc_bytes_within(std::iter::repeat_n(40_000, 600));
        assert_eq!(share, MAX_REGISTRY_TEXT_BYTES / 600);
        // Short tools read whole leave their share to the long ones.
        let mixed = std::iter::repeat_n(100, 10_000).chain(std::iter::repeat_n(60_000, 400));
        let share = doc_bytes_within(mixed.clone());
        let read: usize = mixed.map(|len| len.min(share)).sum();
        assert!(read <= MAX_REGISTRY_TEXT_BYTES, "{read}");
        assert!(read > MAX_REGISTRY_TEXT_BYTES - 400, "{read}");
        assert_eq!(
            doc_bytes_within(std::iter::repeat_n(1 << 20, 100_000)),
            MIN_DOC_BYTES
        );
    }

    /// `n` distinct CJK characters, each a term and each pair a bigram.
    fn cjk(n: u32) -> String {
        (0..n)
            .filter_map(|i| char::from_u32(0x4E00 + i % 20_000))
            .collect()
    }

    #[test]
    fn text_past_a_texts_or_a_tools_bound_is_not_indexed() {
        let filler = "lorem ".repeat(5000);
        let within = format!("Finds early things. {filler} needle");
        assert!(within.len() < MAX_TEXT_BYTES);
        let flood = format!("Finds early things. {} lateword", cjk(200_000));
        let properties =
            format!(r#""a":{{"description":"{within}"}},"b":{{"description":"{within} pastdoc"}}"#);
        let parameters = format!(r#"{{"properties":{{{properties}}}}}"#);
        let tools = vec![
            tool("plain", within.clone(), "{}".into()),
            tool("flood", flood.clone(), "{}".into()),
            // Each text within its bound, the tool past its own.
            tool("many", within.clone(), parameters),
        ];
        let group = ToolGroup {
            name: "srv".into(),
            description: format!("Server. {} latergroup", cjk(100_000)),
        };
        let index = SearchIndex::build(&Registry::new(tools, vec![group]));
        let found = |query: &str| {
            let mut found = index.search(query, 5, |_| true);
            found.sort_unstable();
            found
        };
        assert_eq!(found("needle"), ["srv__many", "srv__plain"]);
        assert_eq!(found("early"), ["srv__flood", "srv__many", "srv__plain"]);
        assert!(found("lateword").is_empty());
        assert!(found("pastdoc").is_empty());
        assert!(found("latergroup").is_empty());
        // The flood's terms: at most a unigram and a bigram per character within the bound.
        let terms = index.growth.builder.texts.len();
        assert!(terms < 2 * (MAX_TEXT_BYTES / 3) + 100, "{terms} terms");
    }

    #[test]
    fn a_text_is_cut_at_a_character_boundary() {
        // One byte short of the bound, then a character of three bytes across it.
        let description = format!("{}漢", "a ".repeat((MAX_TEXT_BYTES - 1) / 2));
        let index = SearchIndex::build(&Registry::new(
            vec![tool("t", description, "{}".into())],
            Vec::new(),
        ));
        assert!(index.search("漢", 5, |_| true).is_empty());
    }
}
