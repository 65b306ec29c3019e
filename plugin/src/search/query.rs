//! A query as the index reads it: one slot per word the query says, each slot holding the
//! forms that word can take in a tool (as written, translated, a synonym, a name it begins, a
//! typo's correction). A tool scores each slot by its best form, so a word counts once however
//! many of its forms a tool holds (`save`, `保存` and `存为` in one description).

use rustc_hash::{FxHashMap, FxHashSet};

use super::analyze::{MAX_STEMMED_BYTES, Token, TokenKind, analyzer};
use super::dictionary::Dictionary;
use super::initials;
use super::lexicon;
use super::vocab::{self, Language};
use super::written_names;

/// A CJK character alone says less than the bigrams around it.
const CJK_UNIGRAM: f32 = 0.3;
/// Two query words written as one in a tool (`file system` -> `filesystem`).
const JOINED: f32 = 0.8;
/// An unknown query word read as two known ones (`mindmap` -> `mind` + `map`).
const SPLIT: f32 = 0.6;
/// A known name term one edit away from an unknown query word.
const TYPO: f32 = 0.7;
/// Initials written in capitals (`HN`) that a server's name stands for: the word itself.
const INITIALS: f32 = 1.0;
/// A name term the query word begins (`screen` -> `screenshot`), scaled by how much it covers.
const PREFIX: f32 = 0.6;
/// A word the vocabulary adds in the other language: the same word, translated.
const TRANSLATION: f32 = 1.0;
/// A word the vocabulary adds in the query's language: a synonym, close but not the same.
const SYNONYM: f32 = 0.5;

/// An English gloss of a Chinese query word from CC-CEDICT: a translation, but a dictionary's,
/// not one chosen for tool language, so it counts less than the vocabulary's.
const GLOSS: f32 = 0.6;
/// An English gloss of a query's character that no word the index holds covers (`图`: diagram,
/// chart): a dictionary's translation of what counts as a character.
const CHARACTER_GLOSS: f32 = GLOSS * CJK_UNIGRAM;
/// A WordNet synonym of a query word: often another sense of the word.
const WORDNET_SYNONYM: f32 = 0.3;
/// What a named thing is (`oslo`: city, `欧元`: currency), at a gloss's weight: like a
/// translation, it says what the name means to a tool, which takes a city, not Oslo.
const KIND: f32 = GLOSS;

/// Two characters of two dictionary words side by side (`多个文件` -> `个文`) are not a word:
/// they say as little as one character. At 1.0 such a bigram, rare in tools, outweighed the
/// query's words in whatever Chinese description held it by chance; 0 to 0.3 gave the same
/// rankings on the Chinese sets, 0.5 lost hits at 1.
const STRADDLING: f32 = CJK_UNIGRAM;

/// Prefixes shorter than this match too many names.
const MIN_PREFIX_CHARS: usize = 4;
const MAX_PREFIX_MATCHES: usize = 8;
/// Shorter words are too often one edit away from an unrelated one.
const MIN_TYPO_CHARS: usize = 5;
const MAX_TYPO_MATCHES: usize = 3;
/// Bounds on the typo search, which a registry's names could otherwise make as slow as they
/// like (28,561 name words `s????k` made one search of 71 such words 3.5 s): the unknown words
/// of one query looked up (at most 4 in the query sets), the name terms of a word's first
/// letter walked (at most 491 there, in the API catalog of 2,825 tools), and the terms of its
/// last letter and length compared edit by edit (at most 10 there).
const MAX_TYPO_WORDS: usize = 8;
const MAX_TYPO_SCAN: usize = 2048;
const MAX_TYPO_CANDIDATES: usize = 64;
const MIN_SPLIT_PART_CHARS: usize = 3;
/// Distinct terms a query reads, the rest ignored: each costs lookups and a slot the ranking
/// walks, and a 500-character query may hold 200 (the query sets hold at most 38).
const MAX_QUERY_TERMS: usize = 64;

/// One form of a word: its terms, which a tool must all hold to match it fully, with weights.
pub(super) type Form = Vec<(u32, f32)>;

pub(super) struct Query {
    /// Per word of the query, its forms; a tool scores the best form, a form the sum of its
    /// terms.
    pub slots: Vec<Vec<Form>>,
    /// The query's words in order, as index terms (`None`: a word no tool holds).
    pub words: Vec<Option<u32>>,
    /// Per slot, whether it holds a compound word whole (`patientview` of `PatientView`) and
    /// one of its parts (`patient`): one word written once, which a tool counts once, in its
    /// own text or its server's, not in both.
    pub once: Vec<bool>,
    /// Terms that stand for a word of the query itself (as written, joined, translated, a
    /// synonym; not a prefix or a typo), sorted.
    said: Vec<u32>,
}

impl Query {
    /// True when the query says `term`, in any language or as a synonym.
    pub fn says(&self, term: u32) -> bool {
        self.said.binary_search(&term).is_ok()
    }

    /// This query with its slot `slot` alone: a tool's score is the sum of its scores for each
    /// slot alone (`explain` reads each slot's share so).
    pub fn slot_alone(&self, slot: usize) -> Query {
        Query {
            slots: vec![self.slots[slot].clone()],
            words: self.words.clone(),
            once: vec![self.once[slot]],
            said: self.said.clone(),
        }
    }
}

pub(super) fn parse(dictionary: &Dictionary, text: &str) -> Query {
    let tokens = of_first_terms(analyzer().tokens(text), MAX_QUERY_TERMS);
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Word)
        .collect();
    let own: FxHashSet<u32> = tokens
        .iter()
        .filter_map(|t| dictionary.term_id(&t.term))
        .collect();
    let mut builder = Builder::default();

    // Vocabulary concepts first: a query word that is one of a concept's forms joins the
    // concept's slot, with the concept's other forms. A word of several concepts (`文件`: file
    // and document) is one slot of all their forms, as is a concept that two words name
    // (`file` and `文件`): a word counts once, by the form a tool holds best.
    let vocabulary = vocab::built_in();
    let stems: Vec<&str> = words.iter().map(|t| t.term.as_str()).collect();
    let lower = text.to_lowercase();
    let dictionary_words = lexicon::chinese_word_spans(&lower);
    // Each distinct dictionary word, and which one each word of the text is: a word written
    // twice is looked up and counted once.
    let mut distinct_words: FxHashMap<&str, usize> = FxHashMap::default();
    let word_of: Vec<usize> = dictionary_words
        .iter()
        .map(|span| {
            let count = distinct_words.len();
            *distinct_words.entry(&lower[span.clone()]).or_insert(count)
        })
        .collect();
    let mut distinct: Vec<&str> = vec![""; distinct_words.len()];
    for (word, at) in distinct_words {
        distinct[at] = word;
    }
    // Each dictionary word's index terms (its bigrams), read once for the checks and glosses below.
    let word_terms: Vec<Vec<String>> = distinct.iter().map(|w| chinese_terms(w)).collect();
    // And the index terms of each of its English glosses that the index holds.
    let word_glosses: Vec<Vec<Vec<u32>>> = distinct
        .iter()
        .map(|word| gloss_ids(dictionary, word))
        .collect();
    // And of the kinds its first gloss names (`欧元`: euro, a currency): its first sense, or a
    // proper noun's name. Not a later sense's (`汉堡` is a hamburger before Hamburg).
    let word_kinds: Vec<Vec<Vec<u32>>> = distinct
        .iter()
        .map(|word| {
            let kinds = lexicon::glosses(word).take(1).flat_map(gloss_kinds);
            kinds
                .filter_map(|kind| word_ids(dictionary, kind))
                .collect()
        })
        .collect();
    let named = vocabulary.concepts_in(&stems, &lower, &dictionary_words);
    let mut concept_slots: FxHashMap<vocab::ConceptId, usize> = FxHashMap::default();
    for word in named.chunk_by(|a, b| (a.language, a.at) == (b.language, b.at)) {
        let slot = word
            .iter()
            .find_map(|n| concept_slots.get(&n.concept).copied())
            .unwrap_or_else(|| builder.new_slot());
        for named in word {
            if concept_slots.insert(named.concept, slot).is_some() {
                continue;
            }
            add_concept(vocabulary, *named, &own, dictionary, slot, &mut builder);
        }
    }

    // Then the query's own terms, each a slot unless a concept took it.
    let straddling = straddling_bigrams(&lower, &dictionary_words, &word_terms);
    let held: Vec<bool> = word_terms
        .iter()
        .zip(&word_glosses)
        .map(|(terms, glosses)| {
            (!terms.is_empty() && terms.iter().all(|t| dictionary.term_id(t).is_some()))
                || !glosses.is_empty()
        })
        .collect();
    let held_words: Vec<_> = dictionary_words
        .iter()
        .zip(&word_of)
        .filter(|&(_, &word)| held[word])
        .map(|(span, _)| span.clone())
        .collect();
    let loose = loose_characters(&lower, &held_words);
    // Each loose character the query says, with its slot if it has one, for its glosses.
    let mut loose_slots: Vec<(&str, Option<usize>)> = Vec::new();
    // A token met again adds the forms it added the first time, to the same slot: not looked
    // up again (`fetch` said 80 times cost 10 times one `fetch`, for the same ranking).
    let mut met: FxHashSet<(TokenKind, &str, &str)> = FxHashSet::default();
    // Each word's slot, for the phrases it begins (below).
    let mut word_slots: FxHashMap<&str, usize> = FxHashMap::default();
    // Each word as written with its slot, for what it names (below).
    let mut named_slots: Vec<(&str, usize)> = Vec::new();
    for token in &tokens {
        // A character inside a dictionary word that the index holds, as written or as its
        // English gloss, says nothing the word does not (the index does not count it as length
        // either); only a loose one is a word of the query.
        if token.kind == TokenKind::CjkUnigram && !loose.contains(token.term.as_str()) {
            continue;
        }
        let first = met.insert((token.kind, &token.term, &token.raw));
        let weight = match token.kind {
            TokenKind::CjkUnigram => CJK_UNIGRAM,
            TokenKind::CjkBigram if straddling.contains(token.term.as_str()) => STRADDLING,
            TokenKind::Word | TokenKind::WholeWord | TokenKind::CjkBigram => 1.0,
        };
        let slot = match dictionary.term_id(&token.term) {
            Some(id) if token.kind == TokenKind::WholeWord && builder.owner.contains_key(&id) => {
                let slot = builder.own_term(id, weight);
                if let Some(slot) = slot {
                    builder.once[slot] = true;
                }
                slot
            }
            Some(id) => builder.own_term(id, weight),
            None if token.kind == TokenKind::Word && first => {
                unknown_word(dictionary, token, &mut builder)
            }
            None => None,
        };
        if first && token.kind == TokenKind::CjkUnigram {
            loose_slots.push((&token.term, slot));
        }
        if first && matches!(token.kind, TokenKind::Word | TokenKind::WholeWord) {
            let slot = slot.unwrap_or_else(|| builder.new_slot());
            if token.kind == TokenKind::Word {
                word_slots.entry(&token.raw).or_insert(slot);
            }
            prefixes(dictionary, &token.term, slot, &mut builder);
            // The word as written (`cars`), else its stem when that is a word (`car`).
            let mut synonyms = lexicon::synonyms(&token.raw).peekable();
            let synonyms = match synonyms.peek() {
                None if token.term != token.raw => lexicon::synonyms(&token.term).collect(),
                _ => synonyms.collect::<Vec<_>>(),
            };
            for synonym in synonyms {
                add_words(dictionary, synonym, WORDNET_SYNONYM, slot, &mut builder);
            }
            named_slots.push((&token.raw, slot));
        }
    }

    // What a word names (`euro`: currency, eur), as written: stemmed, `france` would be the
    // franc; unless it is part of a longer name (`the Sydney Opera House` is no city). After
    // every word has taken its own term, so that `currency` said in the query is a word of its
    // own, not a form of the euro's.
    let longer_names = written_names::LongerNames::of(text);
    for (name, slot) in named_slots {
        let mut kinds = lexicon::kinds(name).peekable();
        if kinds.peek().is_none() || longer_names.hold_back(&[name]) {
            continue;
        }
        for kind in kinds {
            add_words(dictionary, kind, KIND, slot, &mut builder);
        }
    }

    add_file_kinds(dictionary, &lower, &word_slots, &mut builder);

    // CC-CEDICT: a Chinese word of the query adds its English glosses to the slot of the word's
    // first term (its own, or the vocabulary concept's that took it), so a tool counts the word
    // once, as written or translated; a word no tool holds gets a slot for its glosses.
    for ((terms, glosses), kinds) in word_terms.iter().zip(&word_glosses).zip(&word_kinds) {
        let first = terms.first().and_then(|t| dictionary.term_id(t));
        let slot = first
            .and_then(|id| builder.owner.get(&id).copied())
            .unwrap_or_else(|| builder.new_slot());
        for gloss in glosses {
            add_shared(gloss, GLOSS, slot, &mut builder);
        }
        for kind in kinds {
            add_shared(kind, KIND, slot, &mut builder);
        }
    }

    // A loose character is a word of the query too: CC-CEDICT glosses characters as well as
    // words (`画个图`: 图, diagram or chart, for an English-described chart tool). After the
    // words' glosses, so that a word keeps its gloss at a word's weight (`天，日子`: day is
    // 日子's, not 天's at a character's).
    for (character, slot) in loose_slots {
        let glosses = gloss_ids(dictionary, character);
        if glosses.is_empty() {
            continue;
        }
        let slot = slot.unwrap_or_else(|| builder.new_slot());
        for gloss in &glosses {
            add_shared(gloss, CHARACTER_GLOSS, slot, &mut builder);
        }
    }

    phrases(dictionary, &lower, &word_slots, &longer_names, &mut builder);

    // A word written in capitals (`HN`) may be the initials of a server's name (`Hacker
    // News`): a form of the word, worth the word, which a server whose text writes that name
    // holds in its own name. Only a word the query reads: not a stop word (`MCP`, `US`), nor
    // one past the terms read.
    for written in initials::written(text) {
        let Some(&slot) = word_slots.get(written.letters()) else {
            continue;
        };
        let Some(id) = dictionary.term_id(written.term()) else {
            continue;
        };
        if builder.owner.contains_key(&id) {
            continue;
        }
        builder.add_form(slot, vec![(id, INITIALS)], false);
    }

    let mut pairs: FxHashSet<(&str, &str)> = FxHashSet::default();
    for pair in words.windows(2) {
        if !pairs.insert((&pair[0].raw, &pair[1].raw)) {
            continue;
        }
        let joined = format!("{}{}", pair[0].raw, pair[1].raw);
        if let Some(id) = analyzer()
            .word_term(&joined)
            .and_then(|t| dictionary.term_id(&t))
        {
            let slot = builder.new_slot();
            builder.add_form(slot, vec![(id, JOINED)], true);
        }
    }

    let word_ids = words.iter().map(|t| dictionary.term_id(&t.term)).collect();
    builder.finish(word_ids)
}

/// WordNet's two-word verbs and nouns in the query (`work out` -> calculate, `whole number` ->
/// integer): their synonyms join the slot of the phrase's first word, as a word's own synonyms
/// join its slot, so the phrase counts once. Only two words written next to each other (no
/// punctuation between them), neither a stop word (`take to`, `look for` are grammar more often
/// than a phrase), both words the query reads: `slots` holds the slot of each.
fn phrases(
    dictionary: &Dictionary,
    lower: &str,
    slots: &FxHashMap<&str, usize>,
    longer_names: &written_names::LongerNames,
    builder: &mut Builder,
) {
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut met: FxHashSet<(&str, &str)> = FxHashSet::default();
    for pair in words.windows(2) {
        let punctuation = |c: char| c.is_ascii_punctuation();
        let first = pair[0].trim_start_matches(punctuation);
        let second = pair[1].trim_end_matches(punctuation);
        let plain = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase());
        if !plain(first) || !plain(second) || !slots.contains_key(second) {
            continue;
        }
        let Some(&slot) = slots.get(first) else {
            continue;
        };
        if !met.insert((first, second)) {
            continue;
        }
        let phrase = format!("{first} {second}");
        for synonym in lexicon::phrase_synonyms(&phrase) {
            add_words(dictionary, synonym, WORDNET_SYNONYM, slot, builder);
        }
        let mut kinds = lexicon::kinds(&phrase).peekable();
        if kinds.peek().is_none() || longer_names.hold_back(&[first, second]) {
            continue;
        }
        for kind in kinds {
            add_words(dictionary, kind, KIND, slot, builder);
        }
    }
}

/// What the files and directories `lower` names are: a file's name the kinds of its extension
/// (`lease.docx`: a document; `sign.png`: an image), in the slot of the extension's word; a
/// path to a directory (`/srv/media/uploads`) `directory`, whatever its words are, in a slot of
/// its own.
fn add_file_kinds(
    dictionary: &Dictionary,
    lower: &str,
    slots: &FxHashMap<&str, usize>,
    builder: &mut Builder,
) {
    for extension in written_names::file_extensions(lower) {
        let mut kinds = lexicon::kinds(&format!(".{extension}")).peekable();
        if kinds.peek().is_none() {
            continue;
        }
        let slot = slots
            .get(extension)
            .copied()
            .unwrap_or_else(|| builder.new_slot());
        for kind in kinds {
            add_words(dictionary, kind, KIND, slot, builder);
        }
    }
    if written_names::names_a_directory(lower) {
        let slot = builder.new_slot();
        add_words(dictionary, "directory", KIND, slot, builder);
    }
}

/// The kinds a gloss of a Chinese word names: the gloss's own (`swiss franc`); else, of two
/// words, its last word's if that is a currency, the head of an English noun phrase (`japanese
/// yen`: yen), or its first word's if that is a city, a proper noun's name before what it is
/// (`shanghai municipality`). Not a city's name that ends a longer name (`el salvador`).
fn gloss_kinds(gloss: &'static str) -> impl Iterator<Item = &'static str> {
    let mut own = lexicon::kinds(gloss).peekable();
    let is = |word: &str, kind: &str| lexicon::kinds(word).any(|k| k == kind);
    let part = match (own.peek(), gloss.split_once(' ')) {
        (None, Some((_, head))) if is(head, "currency") => Some(head),
        (None, Some((name, _))) if is(name, "city") => Some(name),
        _ => None,
    };
    own.chain(part.into_iter().flat_map(lexicon::kinds))
}

/// `tokens` less those past the first `max` distinct ones (a token met again is kept: the
/// query's words in order tell which names it spells out).
fn of_first_terms(mut tokens: Vec<Token>, max: usize) -> Vec<Token> {
    let mut kept: FxHashSet<(TokenKind, &str, &str)> = FxHashSet::default();
    let keep: Vec<bool> = tokens
        .iter()
        .map(|t| {
            let key = (t.kind, t.term.as_str(), t.raw.as_str());
            kept.contains(&key) || (kept.len() < max && kept.insert(key))
        })
        .collect();
    let mut keep = keep.into_iter();
    tokens.retain(|_| keep.next().unwrap_or(false));
    tokens
}

/// Adds the forms of the concept `named` names to `slot`: a form the query says at full
/// weight, a translation or a synonym at theirs.
fn add_concept(
    vocabulary: &vocab::Vocabulary,
    named: vocab::Named,
    own: &FxHashSet<u32>,
    dictionary: &Dictionary,
    slot: usize,
    builder: &mut Builder,
) {
    for form in vocabulary.forms(named.concept) {
        let Some(ids) = form
            .terms
            .iter()
            .map(|t| dictionary.term_id(t))
            .collect::<Option<Vec<u32>>>()
        else {
            continue;
        };
        let said = ids.iter().all(|id| own.contains(id));
        let weight = if said {
            1.0
        } else if form.language == Language::Chinese
            && ids.len() == 1
            && form.terms[0].chars().count() == 1
        {
            // One character alone matches too much of any Chinese text.
            continue;
        } else if form.language == named.language {
            SYNONYM
        } else {
            TRANSLATION
        };
        // A word of several terms shares one word's weight among them.
        let share = if said { 1.0 } else { 1.0 / ids.len() as f32 };
        builder.add_form(
            slot,
            ids.iter().map(|&id| (id, weight * share)).collect(),
            true,
        );
    }
}

/// The bigrams of `text` that a dictionary word's edge cuts in two (`多个文件` -> `个文`,
/// `的文件` -> `的文`) and that are inside no dictionary word of the text (`word_terms`: each
/// word's bigrams).
fn straddling_bigrams<'t>(
    text: &'t str,
    words: &[std::ops::Range<usize>],
    word_terms: &[Vec<String>],
) -> FxHashSet<&'t str> {
    let inside: FxHashSet<&str> = word_terms.iter().flatten().map(String::as_str).collect();
    let edges: FxHashSet<usize> = words.iter().flat_map(|w| [w.start, w.end]).collect();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    chars
        .windows(2)
        .filter(|pair| pair.iter().all(|&(_, c)| super::analyze::is_cjk(c)))
        .filter(|pair| edges.contains(&pair[1].0))
        .map(|pair| &text[pair[0].0..pair[1].0 + pair[1].1.len_utf8()])
        .filter(|bigram| !inside.contains(bigram))
        .collect()
}

/// The characters of `text` that stand somewhere outside every dictionary word (`words`:
/// in order, apart, as [`lexicon::chinese_word_spans`] gives them).
fn loose_characters<'t>(text: &'t str, words: &[std::ops::Range<usize>]) -> FxHashSet<&'t str> {
    let mut words = words.iter().peekable();
    text.char_indices()
        .filter(|&(at, _)| {
            while words.next_if(|w| w.end <= at).is_some() {}
            !words.peek().is_some_and(|w| w.contains(&at))
        })
        .map(|(at, c)| &text[at..at + c.len_utf8()])
        .collect()
}

/// A Chinese word as index terms: its bigrams, or the character of a one-character word.
fn chinese_terms(word: &str) -> Vec<String> {
    let tokens = analyzer().tokens(word);
    match tokens.as_slice() {
        [single] if single.kind == TokenKind::CjkUnigram => vec![single.term.clone()],
        _ => tokens
            .into_iter()
            .filter(|t| t.kind == TokenKind::CjkBigram)
            .map(|t| t.term)
            .collect(),
    }
}

/// Adds `words` (English, one or two) to `slot` as one form worth `weight`, if every word is an
/// index term.
fn add_words(
    dictionary: &Dictionary,
    words: &str,
    weight: f32,
    slot: usize,
    builder: &mut Builder,
) {
    if let Some(ids) = word_ids(dictionary, words) {
        add_shared(&ids, weight, slot, builder);
    }
}

/// Adds the terms `ids` of one word or phrase to `slot` as one form worth `weight`, shared.
fn add_shared(ids: &[u32], weight: f32, slot: usize, builder: &mut Builder) {
    let share = weight / ids.len() as f32;
    builder.add_form(slot, ids.iter().map(|&id| (id, share)).collect(), false);
}

/// The index terms of each English gloss of a Chinese word or character that the index holds.
fn gloss_ids(dictionary: &Dictionary, chinese: &str) -> Vec<Vec<u32>> {
    lexicon::glosses(chinese)
        .filter_map(|gloss| word_ids(dictionary, gloss))
        .collect()
}

/// The index terms of `words` (English), if there are some and the index holds them all.
fn word_ids(dictionary: &Dictionary, words: &str) -> Option<Vec<u32>> {
    let ids: Option<Vec<u32>> = analyzer()
        .tokens(words)
        .iter()
        .filter(|t| t.kind == TokenKind::Word)
        .map(|t| dictionary.term_id(&t.term))
        .collect();
    ids.filter(|ids| !ids.is_empty())
}

/// A query word no tool holds: two known words run together, or a typo of a name term. A word
/// longer than any stem is neither: trying each split stems each part again, time cubic in the
/// word's length (a query of one 500-letter word took 5 ms).
fn unknown_word(dictionary: &Dictionary, token: &Token, builder: &mut Builder) -> Option<usize> {
    let raw = &token.raw;
    if raw.len() > MAX_STEMMED_BYTES {
        return None;
    }
    let chars: Vec<(usize, char)> = raw.char_indices().collect();
    let split = (MIN_SPLIT_PART_CHARS..=chars.len().saturating_sub(MIN_SPLIT_PART_CHARS))
        .rev()
        .find_map(|i| {
            let (left, right) = raw.split_at(chars[i].0);
            let left = analyzer()
                .word_term(left)
                .and_then(|t| dictionary.term_id(&t))?;
            let right = analyzer()
                .word_term(right)
                .and_then(|t| dictionary.term_id(&t))?;
            Some((left, right))
        });
    if let Some((left, right)) = split {
        let slot = builder.new_slot();
        builder.add_form(slot, vec![(left, SPLIT), (right, SPLIT)], true);
        return Some(slot);
    }
    let length = token.term.chars().count();
    // A word WordNet knows is a word, not a typo (`clock` is not `click`).
    let known = |word: &str| lexicon::synonyms(word).next().is_some();
    if length < MIN_TYPO_CHARS
        || known(raw)
        || known(&token.term)
        || builder.typo_words == MAX_TYPO_WORDS
    {
        return None;
    }
    builder.typo_words += 1;
    let slot = builder.new_slot();
    // People mistype inside a word, rarely its ends: a candidate keeps the first and last
    // letter, which also narrows the search to the names with that first letter.
    let term = token.term.as_str();
    let (Some(first), Some(last)) = (term.chars().next(), term.chars().last()) else {
        return Some(slot);
    };
    let names = dictionary.name_terms();
    let mut buf = [0; 4];
    let first_letter: &str = first.encode_utf8(&mut buf);
    let start = names.partition_point(|(name, _)| name.as_ref() < first_letter);
    names[start..]
        .iter()
        .take(MAX_TYPO_SCAN)
        .take_while(|(name, _)| {
            #[cfg(test)]
            work::TYPO_SCANNED.with(|n| n.set(n.get() + 1));
            name.starts_with(first)
        })
        .filter(|(name, _)| name.ends_with(last))
        // A name's characters counted only as far as the length can still match: a name word
        // may be 32 KiB, and 2,048 of them a query word are walked.
        .filter(|(name, _)| {
            let counted = name.chars().take(length + 2).count();
            #[cfg(test)]
            work::TYPO_CHARS.with(|n| n.set(n.get() + counted));
            counted.abs_diff(length) <= 1
        })
        .take(MAX_TYPO_CANDIDATES)
        .filter(|(name, _)| {
            #[cfg(test)]
            work::TYPO_COMPARED.with(|n| n.set(n.get() + 1));
            strsim::osa_distance(name, term) == 1
        })
        .take(MAX_TYPO_MATCHES)
        .for_each(|&(_, id)| builder.add_form(slot, vec![(id, TYPO)], false));
    Some(slot)
}

/// Name terms that begin with `term`, weighted by the share of the name term it covers.
fn prefixes(dictionary: &Dictionary, term: &str, slot: usize, builder: &mut Builder) {
    let length = term.chars().count();
    if length < MIN_PREFIX_CHARS {
        return;
    }
    let names = dictionary.name_terms();
    let start = names.partition_point(|(name, _)| name.as_ref() < term);
    names[start..]
        .iter()
        .take_while(|(name, _)| name.starts_with(term))
        .filter(|(name, _)| name.as_ref() != term)
        .take(MAX_PREFIX_MATCHES)
        .for_each(|(name, id)| {
            let weight = PREFIX * length as f32 / name.chars().count() as f32;
            builder.add_form(slot, vec![(*id, weight)], false);
        });
}

/// Collects slots; each term belongs to one slot only, the first that takes it.
#[derive(Default)]
struct Builder {
    slots: Vec<Vec<Form>>,
    once: Vec<bool>,
    owner: FxHashMap<u32, usize>,
    said: Vec<u32>,
    /// Unknown words looked up as typos so far.
    typo_words: usize,
}

/// What parsing did, counted for tests that bound the work of hostile names and queries.
#[cfg(test)]
mod work {
    use std::cell::Cell;

    thread_local! {
        /// Name terms walked looking for typos.
        pub static TYPO_SCANNED: Cell<usize> = const { Cell::new(0) };
        /// Name terms compared with a word edit by edit.
        pub static TYPO_COMPARED: Cell<usize> = const { Cell::new(0) };
        /// Characters of name terms counted for their length.
        pub static TYPO_CHARS: Cell<usize> = const { Cell::new(0) };
    }
}

impl Builder {
    fn new_slot(&mut self) -> usize {
        self.slots.push(Vec::new());
        self.once.push(false);
        self.slots.len() - 1
    }

    /// Adds `form` to `slot` unless another slot holds one of its terms; `said` when the form
    /// stands for the query's word itself.
    fn add_form(&mut self, slot: usize, form: Form, said: bool) {
        if form.is_empty()
            || form
                .iter()
                .any(|(t, _)| self.owner.get(t).is_some_and(|&s| s != slot))
        {
            return;
        }
        for &(term, _) in &form {
            self.owner.insert(term, slot);
            if said {
                self.said.push(term);
            }
        }
        self.slots[slot].push(form);
    }

    /// The slot of a term the query itself holds: the one that took it already (raising its
    /// weight to `weight` if it was lower), or a new one.
    fn own_term(&mut self, term: u32, weight: f32) -> Option<usize> {
        if let Some(&slot) = self.owner.get(&term) {
            // Another word's prefix or typo form may have taken it first: the query says it
            // all the same.
            self.said.push(term);
            for form in &mut self.slots[slot] {
                for (t, w) in form.iter_mut() {
                    if *t == term && *w < weight {
                        *w = weight;
                    }
                }
            }
            return Some(slot);
        }
        let slot = self.new_slot();
        self.add_form(slot, vec![(term, weight)], true);
        Some(slot)
    }

    fn finish(mut self, words: Vec<Option<u32>>) -> Query {
        let once = self
            .slots
            .iter()
            .zip(&self.once)
            .filter(|(forms, _)| !forms.is_empty())
            .map(|(_, &once)| once)
            .collect();
        self.slots.retain(|forms| !forms.is_empty());
        self.said.sort_unstable();
        self.said.dedup();
        Query {
            slots: self.slots,
            once,
            words,
            said: self.said,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Origin, Registry, ToolDef};
    use crate::search::SearchIndex;

    /// An index of built-in tools, each a name and a description.
    fn index_of(tools: &[(&str, &str)]) -> SearchIndex {
        let tools = tools
            .iter()
            .map(|&(name, description)| ToolDef {
                name: name.into(),
                description: description.into(),
                parameters: "{}".into(),
                origin: Origin::Builtin,
            })
            .collect();
        SearchIndex::build(&Registry::new(tools, Vec::new()))
    }

    /// Each place `query` holds the indexed term `text`: the slot, and the weight there.
    fn places(dictionary: &Dictionary, query: &Query, text: &str) -> Vec<(usize, f32)> {
        let id = dictionary.term_id(text).expect("an indexed term");
        let slots = query.slots.iter().enumerate();
        let forms = slots.flat_map(|(slot, forms)| forms.iter().flatten().map(move |t| (slot, t)));
        forms
            .filter(|&(_, &(t, _))| t == id)
            .map(|(slot, &(_, w))| (slot, w))
            .collect()
    }

    #[test]
    fn a_query_of_one_long_word_stems_a_bounded_number_of_bytes() {
        use crate::search::analyze::work::STEMMED_BYTES;
        let index = index_of(&[("fs__read_file", "Read a file."), ("ay__say", "Say it.")]);
        for word in ["ay".repeat(250), "readfile".repeat(62), "a".repeat(500)] {
            let before = STEMMED_BYTES.get();
            let query = parse(&index.dictionary, &word);
            let stemmed = STEMMED_BYTES.get() - before;
            assert!(
                stemmed <= 2 * MAX_STEMMED_BYTES,
                "{stemmed} bytes for {}",
                &word[..8]
            );
            assert!(query.slots.is_empty(), "{:?}", query.slots);
        }
        // A word of two known words is still read as both.
        let query = parse(&index.dictionary, "readsay");
        assert_eq!(query.slots.len(), 1);
    }

    #[test]
    fn a_typo_search_over_hostile_names_does_a_bounded_amount_of_work() {
        use work::{TYPO_COMPARED, TYPO_SCANNED};
        // 4,096 name words `s????k` of one first letter, last letter and length, 32 a tool.
        let letter = |i: usize| char::from(b'a' + (i % 8) as u8);
        let words: Vec<String> = (0..4096)
            .map(|i| {
                format!(
                    "s{}{}{}{}k",
                    letter(i),
                    letter(i / 8),
                    letter(i / 64),
                    letter(i / 512)
                )
            })
            .collect();
        let names: Vec<String> = words
            .chunks(32)
            .map(|w| format!("evil__{}", w.join("_")))
            .collect();
        let mut tools: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "A tool.")).collect();
        tools.push(("img__thumbnail", "Make a small picture."));
        let index = index_of(&tools);
        // 40 unknown words, each one edit from none of them.
        let query: Vec<String> = (0..40).map(|i| format!("s{}xyzk", letter(i))).collect();
        let (scanned, compared) = (TYPO_SCANNED.get(), TYPO_COMPARED.get());
        parse(&index.dictionary, &query.join(" "));
        let scanned = TYPO_SCANNED.get() - scanned;
        let compared = TYPO_COMPARED.get() - compared;
        assert!(
            compared <= MAX_TYPO_WORDS * MAX_TYPO_CANDIDATES,
            "{compared}"
        );
        assert!(scanned <= MAX_TYPO_WORDS * (MAX_TYPO_SCAN + 1), "{scanned}");
        // A typo of another first letter is still corrected.
        let query = parse(&index.dictionary, "thumbnial of the screen");
        assert!(!places(&index.dictionary, &query, "thumbnail").is_empty());
    }

    #[test]
    fn a_typo_search_over_long_name_words_reads_a_bounded_part_of_each() {
        use work::TYPO_CHARS;
        // Name words `s???` + 3,000 x + `k`: each of the query word's first and last letter.
        let names: Vec<String> = (0..64)
            .map(|i| {
                let c = char::from(b'a' + (i % 26) as u8);
                format!("evil__s{c}{c}{}k", "x".repeat(3000))
            })
            .collect();
        let tools: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "A tool.")).collect();
        let index = index_of(&tools);
        let before = TYPO_CHARS.get();
        parse(&index.dictionary, "sqazvk");
        let counted = TYPO_CHARS.get() - before;
        // At most the word's length and two more of each name walked (`sqazvk`: 6 + 2).
        assert!(counted <= 64 * 8, "{counted} characters counted");
    }

    fn forms(query: &Query) -> usize {
        query.slots.iter().map(Vec::len).sum()
    }

    #[test]
    fn a_word_said_again_is_read_once_for_the_same_ranking() {
        let index = index_of(&[
            ("web__fetch_page", "Fetch a web page."),
            ("web__fetcher", "Fetches a URL."),
            ("fs__read_file", "Read a file from disk."),
            ("fs__snapshot", "Take a snapshot of a folder."),
            ("zh__read", "读取文件的内容"),
        ]);
        for once in [
            "fetch",
            "fetch web page",
            "read files",
            "snapshoot",
            "读取文件",
        ] {
            let again = format!("{once} ").repeat(30);
            let (one, many) = (
                parse(&index.dictionary, once),
                parse(&index.dictionary, &again),
            );
            assert_eq!(forms(&many), forms(&one), "{once}: {:?}", many.slots);
            assert_eq!(many.slots, one.slots, "{once}");
            assert_eq!(
                index.search_scored(&again, 5, |_| true),
                index.search_scored(&format!("{once} {once}"), 5, |_| true),
                "{once}"
            );
        }
    }

    #[test]
    fn a_query_reads_a_bounded_number_of_distinct_terms() {
        let index = index_of(&[("fs__read_file", "Read a file.")]);
        let letter = |i: usize| char::from(b'a' + (i % 26) as u8);
        let words: Vec<String> = (0..200)
            .map(|i| format!("w{}{}q", letter(i), letter(i / 26)))
            .collect();
        let query = parse(&index.dictionary, &format!("{} read file", words.join(" ")));
        assert!(
            query.words.len() <= MAX_QUERY_TERMS,
            "{}",
            query.words.len()
        );
        // A query of fewer terms reads them all.
        let query = parse(
            &index.dictionary,
            &format!("{} read file", words[..20].join(" ")),
        );
        assert_eq!(query.words.len(), 22);
        assert_eq!(query.slots.len(), 2);
        // A WordNet phrase past the terms read adds nothing either (`work out` -> calculate).
        let index = index_of(&[("math__calculate", "Calculate a sum.")]);
        let query = parse(
            &index.dictionary,
            &format!("{} work out", words[..70].join(" ")),
        );
        assert!(places(&index.dictionary, &query, "calcul").is_empty());
        let query = parse(&index.dictionary, "work out");
        assert!(!places(&index.dictionary, &query, "calcul").is_empty());
    }

    #[test]
    fn a_word_is_said_even_when_a_prefix_of_another_word_took_its_term_first() {
        // `RotoBaller` gives `roto` (no term: its prefix forms take `rotoballer`), then the
        // whole word `rotoballer`, which the query says: the name boost needs to know it.
        let index = index_of(&[("rotoballer_articles", "Articles.")]);
        let query = parse(&index.dictionary, "RotoBaller articles");
        let whole = index
            .dictionary
            .term_id("rotobal")
            .expect("an indexed term");
        assert!(!places(&index.dictionary, &query, "rotobal").is_empty());
        assert!(query.says(whole));
    }

    #[test]
    fn a_word_of_several_concepts_is_one_slot() {
        let index = index_of(&[
            ("fs__stat", "Read a file's size."),
            ("docs__fetch", "Fetch a document."),
        ]);
        let dictionary = &index.dictionary;
        let slots_with = |query: &Query, word: &str| {
            let mut slots: Vec<usize> = places(dictionary, query, word)
                .into_iter()
                .map(|(slot, _)| slot)
                .collect();
            slots.dedup();
            slots
        };
        // `文件` is both "file" and "document" in the vocabulary: one word, counted once.
        let query = parse(dictionary, "文件");
        let file = slots_with(&query, "file");
        assert_eq!(file.len(), 1, "{:?}", query.slots);
        assert_eq!(slots_with(&query, "document"), file);
        // Two words naming one concept are one slot too; other words keep their own.
        let query = parse(dictionary, "file 文件 size");
        let file = slots_with(&query, "file");
        assert_eq!(file.len(), 1);
        assert_eq!(slots_with(&query, "document"), file);
        assert_ne!(slots_with(&query, "size"), file);
    }

    #[test]
    fn a_bigram_across_two_words_counts_as_little_as_one_character() {
        // `个文` is in the story tool (一个 | 文学) and in the query (多个 | 文件), in neither
        // as a word.
        let index = index_of(&[
            ("fs__read", "读取多个文件的内容"),
            ("story__write", "生成一个文学故事"),
        ]);
        let dictionary = &index.dictionary;
        let weight = |query: &Query, gram: &str| {
            places(dictionary, query, gram)
                .into_iter()
                .fold(0.0f32, |max, (_, w)| max.max(w))
        };
        let query = parse(dictionary, "读取多个文件");
        assert_eq!(weight(&query, "个文"), STRADDLING);
        assert_eq!(weight(&query, "多个"), 1.0);
        assert_eq!(weight(&query, "读取"), 1.0);
        let found = index.search("读取多个文件", 2, |_| true);
        assert_eq!(found.first(), Some(&"fs__read"));
    }

    #[test]
    fn a_character_inside_a_word_has_no_slot_of_its_own() {
        let index = index_of(&[("fs__read", "读取文件"), ("text__zh", "中文文本")]);
        let dictionary = &index.dictionary;
        let held = |query: &Query, gram: &str| !places(dictionary, query, gram).is_empty();
        // `文` says nothing that `文件` does not.
        let query = parse(dictionary, "读取文件");
        assert!(held(&query, "文件"));
        assert!(!held(&query, "文"));
        // Alone, it is the query's word; so it is inside a word no tool holds (`文档`): there
        // it is all the query can match.
        assert!(held(&parse(dictionary, "读取 文"), "文"));
        assert!(held(&parse(dictionary, "读取文档"), "文"));
    }

    #[test]
    fn a_word_found_by_its_gloss_leaves_no_loose_characters() {
        // No tool holds `天气`, but one holds its gloss, `weather`: the word is found, and its
        // characters are not words of the query on their own (`天` of `今天` is no weather).
        let index = index_of(&[
            ("meteo__forecast", "Weather forecast for a city."),
            ("news__today", "今天的新闻"),
        ]);
        let dictionary = &index.dictionary;
        let query = parse(dictionary, "天气");
        assert!(!places(dictionary, &query, "weather").is_empty());
        assert!(places(dictionary, &query, "天").is_empty());
        assert_eq!(
            index.search("天气", 2, |_| true),
            ["meteo__forecast"],
            "{:?}",
            query.slots
        );
    }

    #[test]
    fn a_two_word_verb_reaches_its_wordnet_synonym() {
        // WordNet's `work out` is `calculate`; neither word of it says so.
        let index = index_of(&[
            (
                "math__calculate",
                "Calculate the value of an arithmetic expression.",
            ),
            ("gym__log", "Log the work of a training session."),
        ]);
        let dictionary = &index.dictionary;
        let query = parse(dictionary, "work out 17 percent of 2340");
        let work = places(dictionary, &query, "work");
        let calculate = places(dictionary, &query, "calcul");
        assert!(!work.is_empty());
        assert_eq!(
            calculate,
            [(work[0].0, WORDNET_SYNONYM)],
            "in the first word's slot, at a synonym's weight: {:?}",
            query.slots
        );
        // Nothing else of the query is in the calculator's text.
        assert_eq!(
            index.search("work out 17 percent of 2340", 2, |_| true),
            ["gym__log", "math__calculate"]
        );
        // Not across a stop word (`work at out`), nor across a sentence's end.
        for apart in ["work at out 17 percent", "time to work. out of ideas"] {
            let query = parse(dictionary, apart);
            assert!(places(dictionary, &query, "calcul").is_empty(), "{apart}");
        }
        // Quoted, it is the same phrase.
        let query = parse(dictionary, "\"work out\" 17 percent");
        assert_eq!(places(dictionary, &query, "calcul").len(), 1);
    }

    #[test]
    fn a_loose_character_reaches_its_glosses_at_a_characters_weight() {
        let index = index_of(&[
            ("chart__bar_chart", "Generate a bar chart."),
            ("maps__show_map", "Show a map."),
            ("fs__read_file", "Read a file."),
        ]);
        let dictionary = &index.dictionary;
        // `画个图`: no word holds `图`, which CC-CEDICT glosses as diagram, chart, map, ...
        let query = parse(dictionary, "画个图");
        let chart = places(dictionary, &query, "chart");
        assert_eq!(chart.len(), 1, "{:?}", query.slots);
        assert_eq!(chart[0].1, CHARACTER_GLOSS);
        assert_eq!(
            places(dictionary, &query, "map"),
            [(chart[0].0, CHARACTER_GLOSS)],
            "the character's glosses share its slot: {:?}",
            query.slots
        );
        let mut found = index.search("画个图", 3, |_| true);
        found.sort();
        assert_eq!(found, ["chart__bar_chart", "maps__show_map"]);
        // Inside a word the index holds (`地图`, map), the character is the word's.
        let query = parse(dictionary, "地图");
        assert!(
            places(dictionary, &query, "chart").is_empty(),
            "{:?}",
            query.slots
        );
        assert_eq!(index.search("地图", 1, |_| true), ["maps__show_map"]);
    }

    #[test]
    fn a_words_gloss_outweighs_a_characters_whatever_their_order() {
        // `日子` and `天` both gloss as day: the word's gloss keeps it, at a word's weight.
        let index = index_of(&[
            ("calendar__events_of_day", "Events of a day."),
            ("fs__read_file", "Read a file."),
        ]);
        let dictionary = &index.dictionary;
        for text in ["天，日子", "日子，天"] {
            let query = parse(dictionary, text);
            let day = places(dictionary, &query, "day");
            assert_eq!(
                day.iter().map(|&(_, weight)| weight).collect::<Vec<_>>(),
                [GLOSS],
                "{text}: {:?}",
                query.slots
            );
        }
    }

    /// Whether `index` reads `text` with the word `word` (stemmed as the index stems it) among
    /// its forms.
    fn holds_word(index: &SearchIndex, text: &str, word: &str) -> bool {
        let dictionary = &index.dictionary;
        let term = analyzer().word_term(word).expect("a word");
        !places(dictionary, &parse(dictionary, text), &term).is_empty()
    }

    #[test]
    fn a_file_or_directory_adds_its_kind_only_where_it_is_written_as_one() {
        let index = index_of(&[
            ("vision__read_text", "Read the text shown in an image."),
            ("fs__list_directory", "List the entries of a directory."),
        ]);
        let has = |text: &str, word: &str| holds_word(&index, text, word);
        assert!(has("what does sign_0412.png say", "image"));
        assert!(has("what is in /srv/media/uploads", "directory"));
        // The extension alone is no file's name, and a path to a file is no directory.
        assert!(!has("png in my notes", "image"));
        assert!(!has("what is in ~/notes/todo.txt", "directory"));
        assert!(!has("open wikipedia.org", "text"));
    }

    #[test]
    fn a_programming_languages_short_name_reads_as_the_language() {
        let index = index_of(&[
            ("browser__evaluate", "Execute JavaScript in the page."),
            ("terminal__run", "Run a command in a shell."),
            ("build__target", "Build a target of a Makefile."),
        ]);
        let has = |text: &str, word: &str| holds_word(&index, text, word);
        assert!(has("run this JS on the page", "javascript"));
        assert!(has("an sh one-liner", "shell"));
        // An alias that is an English word is that word: Linguist lists `make` for Makefile.
        assert!(!has("make a new page", "makefile"));
        assert_eq!(
            index.search("a snippet of JS", 1, |_| true),
            ["browser__evaluate"]
        );
    }

    #[test]
    fn a_phrase_joins_its_first_words_slot_when_no_tool_holds_that_word() {
        // No tool holds `work`; its WordNet synonym `employment` takes a slot for it, and
        // `work out`'s `calculate` joins that slot: the query's word counts once.
        let index = index_of(&[
            ("math__calculate", "Calculate a sum."),
            ("hr__hire", "Record the employment of a worker."),
        ]);
        let dictionary = &index.dictionary;
        let query = parse(dictionary, "work out");
        let employ = places(dictionary, &query, "employ");
        let calculate = places(dictionary, &query, "calcul");
        assert_eq!(employ.len(), 1, "{:?}", query.slots);
        assert_eq!(calculate.len(), 1, "{:?}", query.slots);
        assert_eq!(employ[0].0, calculate[0].0, "{:?}", query.slots);
    }
}
