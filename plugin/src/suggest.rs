//! "Did you mean": the one measure every hint uses, in the plugin (config
//! keys, tool names in guard results) and in the harness (profile keys,
//! plugin ids, session commands).
//!
//! The measure is case-insensitive Jaro-Winkler (strsim's). A hint runs
//! inside a plugin call's deadline and compares a word with every name an
//! agent may call, so it is kept cheap and bounded: a word longer than
//! [`MAX_WORD_CHARS`] gets none; bounds from the two lengths and from the
//! letters the two share skip most candidates before any score (only those
//! that could not score above the threshold: the hints stay the same); and
//! [`Hints`] looks up at most [`Hints::WORDS`] words and
//! [`Hints::CANDIDATES`] candidates in one call.

/// How alike two words must be (case-insensitive Jaro-Winkler) for one to
/// be offered as the likely intended spelling of the other.
const THRESHOLD: f64 = 0.8;

/// The longest word (in characters, lowercased) a hint is looked for: longer
/// than any tool name, key or command anyone types by mistake. A score costs
/// up to the product of the two lengths.
pub const MAX_WORD_CHARS: usize = 128;

/// The candidate most like `word`, when one is close enough to be a likely
/// typo. Ties go to the smaller candidate, so a hint never depends on the
/// order the candidates come in. A word of more than [`MAX_WORD_CHARS`]
/// characters has none.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut unbounded = usize::MAX;
    closest_within(&mut Word::new(word)?, candidates, &mut unbounded)
}

/// [`closest`], comparing at most `budget` candidates (less what it compares):
/// past that, none, since a hint from some of the candidates would depend on
/// their order.
fn closest_within<'a>(
    word: &mut Word,
    candidates: impl IntoIterator<Item = &'a str>,
    budget: &mut usize,
) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for known in candidates {
        *budget = budget.checked_sub(1)?;
        let Some(score) = word.score(known) else {
            continue;
        };
        let better = best.is_none_or(|(top, top_known)| {
            score
                .total_cmp(&top)
                .then_with(|| top_known.cmp(known))
                .is_gt()
        });
        if score > THRESHOLD && better {
            best = Some((score, known));
        }
    }
    best.map(|(_, known)| known)
}

/// `; did you mean `x`?` or nothing, to append to a message.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    hint(closest(word, candidates))
}

/// The hint naming `known`, cut as a result shows a name (a server's name may be a
/// paragraph of any length).
fn hint(known: Option<&str>) -> String {
    known
        .map(|known| {
            let known = crate::shown::tool_name(known.to_string());
            format!("; did you mean `{known}`?")
        })
        .unwrap_or_default()
}

/// The hints of one call. A call may name many unknown tools, and each hint
/// compares its word with every name the agent may call: only the first
/// [`Hints::WORDS`] words looked up get one, while the call has compared
/// fewer than [`Hints::CANDIDATES`] candidates. The others get none (their
/// message says "unknown" without a "did you mean").
#[derive(Debug)]
pub struct Hints {
    words: usize,
    candidates: usize,
}

impl Default for Hints {
    fn default() -> Self {
        Self {
            words: Self::WORDS,
            candidates: Self::CANDIDATES,
        }
    }
}

impl Hints {
    /// How many words one call looks up.
    pub const WORDS: usize = 3;
    /// How many candidates one call compares its words with, in all: a word
    /// against 100,000 tool names and more (some 15 ms inside the component,
    /// where a call has 50), three against 40,000.
    pub const CANDIDATES: usize = 120_000;

    /// [`did_you_mean`] while this call has words and candidates left, else
    /// nothing.
    pub fn did_you_mean<'a>(
        &mut self,
        word: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> String {
        if self.words == 0 {
            return String::new();
        }
        let Some(mut word) = Word::new(word) else {
            return String::new();
        };
        self.words -= 1;
        hint(closest_within(&mut word, candidates, &mut self.candidates))
    }
}

/// A word lowercased once, with what the bounds need, and buffers reused for
/// every candidate.
struct Word {
    chars: Vec<char>,
    /// The same when every character is ASCII: candidates that are ASCII too
    /// are compared byte by byte.
    bytes: Option<Vec<u8>>,
    /// How many times each ASCII character occurs in the word; every other
    /// character counts in the last slot.
    counts: Letters,
    /// The same in 64 buckets ([`bucket`]), as sets: `levels[k]` holds the
    /// buckets with more than `k` of the word's letters (three sets at least).
    levels: Vec<u64>,
    candidate_bytes: Vec<u8>,
    candidate_chars: Vec<char>,
    scratch: Scratch,
}

/// Occurrences per ASCII character, and of all others together in the last
/// slot (a word has at most [`MAX_WORD_CHARS`] characters: they fit in a byte).
type Letters = [u8; 129];

/// What the letter bounds read of one element of a word.
trait Letter: Copy + Eq {
    /// Whether two elements are equal exactly when their slots are (bytes:
    /// the words compared are ASCII, lowercased).
    const SLOT_IS_LETTER: bool;
    /// Its slot in [`Letters`], lowercased: the bounds read a candidate's
    /// bytes as they are, before any copy.
    fn slot(self) -> usize;
    /// The [`bucket`] of its slot.
    fn bucket(self) -> usize {
        bucket(self.slot())
    }
}

impl Letter for u8 {
    const SLOT_IS_LETTER: bool = true;

    fn slot(self) -> usize {
        usize::from(self.to_ascii_lowercase().min(128))
    }

    fn bucket(self) -> usize {
        usize::from(BYTE_BUCKETS[usize::from(self)])
    }
}

impl Letter for char {
    const SLOT_IS_LETTER: bool = false;

    fn slot(self) -> usize {
        (self as usize).min(128)
    }
}

impl Word {
    fn new(word: &str) -> Option<Self> {
        let chars: Vec<char> = word.to_lowercase().chars().collect();
        if chars.len() > MAX_WORD_CHARS {
            return None;
        }
        let mut counts = [0u8; 129];
        let mut buckets = [0usize; 64];
        let mut levels = vec![0u64; 3];
        for c in &chars {
            counts[c.slot()] += 1;
            let b = c.bucket();
            if levels.len() == buckets[b] {
                levels.push(0);
            }
            levels[buckets[b]] |= 1 << b;
            buckets[b] += 1;
        }
        let bytes = chars
            .iter()
            .all(char::is_ascii)
            .then(|| chars.iter().map(|&c| c as u8).collect());
        Some(Self {
            chars,
            bytes,
            counts,
            levels,
            candidate_bytes: Vec::new(),
            candidate_chars: Vec::new(),
            scratch: Scratch::default(),
        })
    }

    /// The word's score against `known`: `None` when the bounds show it
    /// cannot be above the threshold.
    fn score(&mut self, known: &str) -> Option<f64> {
        #[cfg(test)]
        tally::add(|w| w.examined += 1);
        if known.is_ascii() {
            // Lowercasing keeps its length: the lengths first, before any copy.
            if !lengths_may_pass(self.chars.len(), known.len()) {
                return None;
            }
            if let Some(word) = &self.bytes {
                if !self.may_pass(word, known.as_bytes()) {
                    return None;
                }
                self.candidate_bytes.clear();
                self.candidate_bytes
                    .extend(known.bytes().map(|b| b.to_ascii_lowercase()));
                return Some(jaro_winkler(word, &self.candidate_bytes, &mut self.scratch));
            }
        }
        self.candidate_chars.clear();
        if known.is_ascii() {
            self.candidate_chars
                .extend(known.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            self.candidate_chars.extend(known.to_lowercase().chars());
        }
        let (word, known) = (&self.chars, &self.candidate_chars);
        self.may_pass(word, known)
            .then(|| jaro_winkler(word, known, &mut self.scratch))
    }

    /// Whether this word (`word`, lowercased) and a candidate (`known`, read
    /// lowercased by [`Letter::slot`]) may score above the threshold, from
    /// their lengths and the letters they share.
    ///
    /// Jaro is `J = (m/a + m/b + (m - t)/m) / 3` for lengths `a`, `b`, `m`
    /// matching characters and `t` transpositions; Jaro-Winkler adds
    /// `0.1 p (1 - J)` for a common prefix of `p <= 4` characters, and only when
    /// `J > 0.7` (strsim's rule). So a score above 0.8 needs `J > 0.7`. Each
    /// match pairs equal characters, so `m <= c`, the characters the two share
    /// counted with repeats, and `c <= min(a, b)`. With `t >= 0`,
    /// `J <= Jc = (c/a + c/b + 1) / 3`, and as the score grows with `J`, it is at
    /// most `Jc + 0.1 p (1 - Jc)`. A candidate is skipped when `Jc < 0.7`, or
    /// when that most is below 0.8: first with `c = min(a, b)` (the lengths
    /// alone), then with a bound on `c` from the letters the candidate holds,
    /// in buckets (a bucket's `min(na, nb)` is at least the sum of its
    /// letters' own), then with `c` itself.
    ///
    /// The comparisons are in integers and strict: a skipped candidate's bound is
    /// below 0.7 (or 0.8) by at least `1 / (30 a b)`, far more than the rounding
    /// of the score's floating point. A bound equal to 0.7 is not skipped: the
    /// score may compute it just above (`abcd` against a 40-character name that
    /// begins with it scores 0.82).
    fn may_pass<T: Letter>(&self, word: &[T], known: &[T]) -> bool {
        let (a, b) = (word.len() as u64, known.len() as u64);
        if a == 0 || b == 0 {
            // Scored as strsim does: 1 when both are empty, else 0.
            return true;
        }
        if !lengths_may_pass(word.len(), known.len()) {
            return false;
        }
        // The common prefix, or more (other characters than ASCII share a slot).
        let prefix = word
            .iter()
            .take(4)
            .zip(known)
            .take_while(|(x, y)| x.slot() == y.slot())
            .count() as u64;
        // Jc + 0.1 p (1 - Jc) < 0.8  <=>  (c (a + b) + a b) (10 - p) < 3 a b (8 - p).
        let under_score = |c: u64| (c * (a + b) + a * b) * (10 - prefix) < 3 * a * b * (8 - prefix);
        let under = |c: u64| under_jaro(a, b, c) || under_score(c);
        if under(a.min(b)) {
            return false;
        }
        // The letters shared are at most those the buckets share, the sum over
        // `k` of the buckets holding more than `k` letters of both; the
        // candidate's sets for `k >= 2` are within the one for 2 (a few bit
        // operations a letter), ...
        let (mut once, mut twice, mut thrice) = (0u64, 0u64, 0u64);
        for x in known {
            let bit = 1 << x.bucket();
            thrice |= twice & bit;
            twice |= once & bit;
            once |= bit;
        }
        let held = |word: u64, known: u64| u64::from((word & known).count_ones());
        let most = held(self.levels[0], once)
            + held(self.levels[1], twice)
            + self.levels[2..]
                .iter()
                .map(|&word| held(word, thrice))
                .sum::<u64>();
        if under(most) {
            return false;
        }
        // ... then exactly, with repeats.
        let mut left = self.counts;
        let mut shared = 0;
        for x in known {
            let count = &mut left[x.slot()];
            shared += u64::from(*count > 0);
            *count = count.saturating_sub(1);
        }
        !under(shared)
    }
}

/// The bound of [`Word::may_pass`] from the lengths alone: `c = min(a, b)` in
/// `Jc < 0.7` reads `min/max < 0.1`, so a name ten times as long as the
/// other is never alike enough.
fn lengths_may_pass(a: usize, b: usize) -> bool {
    let (a, b) = (a as u64, b as u64);
    a == 0 || b == 0 || !under_jaro(a, b, a.min(b))
}

/// One of 64 buckets for a letter's slot: `a`-`z`, `0`-`9`, `_`, `-` and `.`
/// (the letters of tool names) have one each, the others share the rest.
const fn bucket(slot: usize) -> usize {
    SLOT_BUCKETS[slot] as usize
}

const SLOT_BUCKETS: [u8; 129] = {
    let mut table = [0; 129];
    let mut slot = 0;
    while slot < 129 {
        let c = slot as u8;
        table[slot] = match c {
            b'a'..=b'z' => c - b'a',
            b'0'..=b'9' => 26 + c - b'0',
            b'_' => 36,
            b'-' => 37,
            b'.' => 38,
            _ => 39 + c % 25,
        };
        slot += 1;
    }
    table
};

/// [`bucket`] of each byte's slot, looked up in one step.
const BYTE_BUCKETS: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        let lower = (byte as u8).to_ascii_lowercase() as usize;
        let slot = if lower < 128 { lower } else { 128 };
        table[byte] = SLOT_BUCKETS[slot];
        byte += 1;
    }
    table
};

/// `Jc < 0.7` for lengths `a`, `b` and `c` shared characters:
/// `10 c (a + b) < 11 a b`.
fn under_jaro(a: u64, b: u64, c: u64) -> bool {
    10 * c * (a + b) < 11 * a * b
}

/// strsim's Jaro-Winkler over two lowercased words, element by element (the
/// same matches, transpositions and arithmetic, so the same score to the
/// bit), without its allocation per pair nor its scan from the start of `b`
/// for each element of `a`.
fn jaro_winkler<T: Letter>(a: &[T], b: &[T], scratch: &mut Scratch) -> f64 {
    #[cfg(test)]
    tally::add(|w| w.scored += 1);
    let sim = jaro(a, b, scratch);
    if sim > 0.7 {
        let prefix_length = a.iter().take(4).zip(b).take_while(|(x, y)| x == y).count();
        sim + 0.1 * prefix_length as f64 * (1.0 - sim)
    } else {
        sim
    }
}

/// What a score reuses from one candidate to the next.
struct Scratch {
    flags: Vec<bool>,
    /// Per slot, where it occurs in the candidate (a bit a position); all zero
    /// between scores.
    positions: [u64; 129],
}

impl Default for Scratch {
    fn default() -> Self {
        Self {
            flags: Vec::new(),
            positions: [0; 129],
        }
    }
}

fn jaro<T: Letter>(a: &[T], b: &[T], scratch: &mut Scratch) -> f64 {
    let (a_len, b_len) = (a.len(), b.len());
    if a_len == 0 && b_len == 0 {
        return 1.0;
    } else if a_len == 0 || b_len == 0 {
        return 0.0;
    }
    // Each element of `a` matches the first element of `b` equal to it, not
    // matched yet, within `search_range` of its position.
    let search_range = (a_len.max(b_len) / 2).saturating_sub(1);
    let (matches, transpositions) = if T::SLOT_IS_LETTER && a_len <= 64 && b_len <= 64 {
        matches_in_bits(a, b, search_range, &mut scratch.positions)
    } else {
        matches_in_flags(a, b, search_range, &mut scratch.flags)
    };
    if matches == 0 {
        return 0.0;
    }
    ((matches as f64 / a_len as f64)
        + (matches as f64 / b_len as f64)
        + ((matches - transpositions) as f64 / matches as f64))
        / 3.0
}

/// The matches and transpositions of two words, as strsim finds them.
fn matches_in_flags<T: Letter>(
    a: &[T],
    b: &[T],
    search_range: usize,
    flags: &mut Vec<bool>,
) -> (usize, usize) {
    let (a_len, b_len) = (a.len(), b.len());
    flags.clear();
    flags.resize(a_len + b_len, false);
    let (a_flags, b_flags) = flags.split_at_mut(a_len);
    let mut matches = 0_usize;
    for (i, &x) in a.iter().enumerate() {
        let low = i.saturating_sub(search_range);
        let high = b_len.min(i + search_range + 1);
        for j in low..high {
            if !b_flags[j] && b[j] == x {
                a_flags[i] = true;
                b_flags[j] = true;
                matches += 1;
                break;
            }
        }
    }
    // The matched elements of each, in order: each pair that differs is half a
    // transposition.
    let mut transpositions = 0_usize;
    let mut j = 0;
    for (i, &x) in a.iter().enumerate() {
        if a_flags[i] {
            while !b_flags[j] {
                j += 1;
            }
            if b[j] != x {
                transpositions += 1;
            }
            j += 1;
        }
    }
    (matches, transpositions / 2)
}

/// [`matches_in_flags`] for two words of at most 64 letters whose slots are
/// the letters themselves: the first free match in the window is the lowest
/// bit of a few masks.
fn matches_in_bits<T: Letter>(
    a: &[T],
    b: &[T],
    search_range: usize,
    positions: &mut [u64; 129],
) -> (usize, usize) {
    let below = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    for (j, x) in b.iter().enumerate() {
        positions[x.slot()] |= 1 << j;
    }
    let (mut a_flags, mut b_flags) = (0u64, 0u64);
    for (i, x) in a.iter().enumerate() {
        let low = i.saturating_sub(search_range);
        let high = b.len().min(i + search_range + 1);
        let free = positions[x.slot()] & below(high) & !below(low) & !b_flags;
        if free != 0 {
            a_flags |= 1 << i;
            b_flags |= free & free.wrapping_neg();
        }
    }
    for x in b {
        positions[x.slot()] = 0;
    }
    let matches = a_flags.count_ones() as usize;
    let mut transpositions = 0_usize;
    while a_flags != 0 {
        let (i, j) = (a_flags.trailing_zeros(), b_flags.trailing_zeros());
        if a[i as usize] != b[j as usize] {
            transpositions += 1;
        }
        a_flags &= a_flags - 1;
        b_flags &= b_flags - 1;
    }
    (matches, transpositions / 2)
}

/// The work hints did on this thread, for tests that bound it without timing it.
#[cfg(test)]
pub(crate) mod tally {
    use std::cell::Cell;

    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Work {
        /// Candidates a word was compared with (by a bound or by a score).
        pub examined: usize,
        /// Candidates scored in full.
        pub scored: usize,
    }

    thread_local! {
        static WORK: Cell<Work> = Cell::default();
    }

    pub(super) fn add(f: impl FnOnce(&mut Work)) {
        WORK.with(|cell| {
            let mut work = cell.get();
            f(&mut work);
            cell.set(work);
        });
    }

    /// The work since the last call on this thread.
    pub fn take() -> Work {
        WORK.with(Cell::take)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The measure as it was first written: every candidate lowercased and
    /// scored by strsim.
    fn reference<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        let word = word.to_lowercase();
        candidates
            .into_iter()
            .map(|known| (strsim::jaro_winkler(&word, &known.to_lowercase()), known))
            .filter(|(score, _)| *score > THRESHOLD)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
            .map(|(_, known)| known)
    }

    #[test]
    fn suggests_only_close_words() {
        let keys = ["id", "name", "config", "disabled"];
        assert_eq!(closest("confg", keys), Some("config"));
        assert_eq!(closest("Disabled", keys), Some("disabled"));
        assert_eq!(closest("source", keys), None);
        assert_eq!(did_you_mean("nmae", keys), "; did you mean `name`?");
        assert_eq!(did_you_mean("zzz", keys), "");
    }

    #[test]
    fn ties_do_not_depend_on_order() {
        assert_eq!(closest("ab_x", ["ab_y", "ab_z"]), Some("ab_y"));
        assert_eq!(closest("ab_x", ["ab_z", "ab_y"]), Some("ab_y"));
    }

    #[test]
    fn config_keys_and_tool_names() {
        assert_eq!(closest("noDefr", ["defer", "noDefer"]), Some("noDefer"));
        assert_eq!(
            closest(
                "github__create_isue",
                ["github__create_issue", "slack__post"]
            ),
            Some("github__create_issue")
        );
    }

    #[test]
    fn lengths_and_shared_letters_skip_candidates_before_any_score() {
        let long = "github__create_issue".repeat(10);
        let candidates = [
            "github__create_issue",
            "github__list_issues",
            "slack__post_message",
            "x",
            long.as_str(),
        ];
        tally::take();
        assert_eq!(
            closest("github__create_isue", candidates),
            Some("github__create_issue")
        );
        let work = tally::take();
        assert_eq!(work.examined, 5);
        // Slack shares too few letters, `x` is too short, the last one too long.
        assert_eq!(work.scored, 2, "{work:?}");
        // Ten times as long is kept: its bound may be computed just above 0.7.
        let ten_times = format!("abcd{}", "x".repeat(36));
        assert_eq!(
            closest("abcd", [ten_times.as_str()]),
            Some(ten_times.as_str())
        );
        assert_eq!(
            reference("abcd", [ten_times.as_str()]),
            Some(ten_times.as_str())
        );
        assert_eq!(tally::take().scored, 1);
        let longer = format!("{ten_times}x");
        assert_eq!(closest("abcd", [longer.as_str()]), None);
        assert_eq!(tally::take().scored, 0);
    }

    #[test]
    fn a_word_past_the_longest_gets_no_hint_and_costs_nothing() {
        let long = "n".repeat(MAX_WORD_CHARS + 1);
        let near = "n".repeat(MAX_WORD_CHARS + 2);
        tally::take();
        assert_eq!(closest(&long, [near.as_str()]), None);
        assert_eq!(tally::take(), tally::Work::default());
        let longest = &long[1..];
        assert_eq!(closest(longest, [near.as_str()]), Some(near.as_str()));
    }

    #[test]
    fn a_call_looks_up_its_first_few_words() {
        let mut hints = Hints::default();
        // A word too long to look up is not counted.
        assert_eq!(
            hints.did_you_mean(&"n".repeat(MAX_WORD_CHARS + 1), ["name"]),
            ""
        );
        for _ in 0..Hints::WORDS {
            assert_eq!(
                hints.did_you_mean("nmae", ["name"]),
                "; did you mean `name`?"
            );
        }
        tally::take();
        assert_eq!(hints.did_you_mean("nmae", ["name"]), "");
        assert_eq!(tally::take().examined, 0);
    }

    #[test]
    fn a_call_compares_a_bounded_number_of_candidates() {
        let names: Vec<String> = (0..Hints::CANDIDATES / 2)
            .map(|i| format!("server_{i}__get"))
            .collect();
        let mut hints = Hints::default();
        let hint = hints.did_you_mean("server_7__gte", names.iter().map(String::as_str));
        assert_eq!(hint, "; did you mean `server_7__get`?");
        tally::take();
        // The second word takes the rest of the candidates, which is all of them
        // but one: a hint from some of them could differ from the one from all.
        let all = names.iter().map(String::as_str).chain(["server_7__get"]);
        assert_eq!(hints.did_you_mean("server_7__gte", all), "");
        assert_eq!(tally::take().examined, Hints::CANDIDATES / 2);
        assert_eq!(hints.did_you_mean("server_7__gte", ["server_7__get"]), "");
        assert_eq!(tally::take().examined, 0);
    }

    #[test]
    fn the_letters_of_names_have_buckets_of_their_own() {
        let letters: Vec<u8> = (b'a'..=b'z').chain(b'0'..=b'9').chain(*b"_-.").collect();
        let buckets: std::collections::BTreeSet<usize> =
            letters.iter().map(|&b| b.bucket()).collect();
        assert_eq!(buckets.len(), letters.len());
        for byte in 0..=u8::MAX {
            assert_eq!(byte.bucket(), bucket(byte.slot()), "{byte}");
            assert_eq!(
                byte.bucket(),
                char::from(byte).to_ascii_lowercase().bucket()
            );
        }
    }

    /// Words made of few letters (so that they often match), in both cases,
    /// with characters that lowercase to more than one.
    fn word() -> impl Strategy<Value = String> {
        "[abAB_İßé]{0,12}"
    }

    proptest! {
        #[test]
        fn the_score_is_strsims_to_the_bit(a in word(), b in word()) {
            let (a, b) = (a.to_lowercase(), b.to_lowercase());
            let chars = |s: &str| s.chars().collect::<Vec<char>>();
            let mut scratch = Scratch::default();
            let score = jaro_winkler(&chars(&a), &chars(&b), &mut scratch);
            prop_assert_eq!(score.to_bits(), strsim::jaro_winkler(&a, &b).to_bits());
            if a.is_ascii() && b.is_ascii() {
                let bytes = jaro_winkler(a.as_bytes(), b.as_bytes(), &mut scratch);
                prop_assert_eq!(bytes.to_bits(), score.to_bits());
            }
        }

        #[test]
        fn the_score_of_ascii_words_is_strsims_to_the_bit(
            a in "[abcAB_]{0,70}",
            b in "[abcAB_]{0,70}",
        ) {
            // Up to 64 letters each in bit sets, longer ones element by element.
            let (a, b) = (a.to_lowercase(), b.to_lowercase());
            let score = jaro_winkler(a.as_bytes(), b.as_bytes(), &mut Scratch::default());
            prop_assert_eq!(score.to_bits(), strsim::jaro_winkler(&a, &b).to_bits());
        }

        #[test]
        fn hints_are_those_of_every_candidate_scored(
            word in word(),
            candidates in proptest::collection::vec(word(), 0..12),
        ) {
            let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
            prop_assert_eq!(
                closest(&word, candidates.iter().copied()),
                reference(&word, candidates.iter().copied())
            );
        }
    }
}
