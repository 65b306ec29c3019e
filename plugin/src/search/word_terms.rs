//! Each distinct piece of text an index build has met (a lowercase word or a CJK gram) and
//! the term it became, so that each is stemmed and looked up once. Every token of every tool
//! is looked up here (ten thousand tools: about 700,000 lookups of a few thousand pieces), so
//! a short piece, as most are, is its own key: its bytes and length packed in two integers,
//! hashed and compared without reading a string, in a small open-addressing table of its
//! own. In the component a general hash map was the largest part of an index build: string
//! equality calls wasi-libc's byte-by-byte `memcmp`, and the map's probing and hashing did not
//! inline: an `FxHashMap` keyed by the same packed integers made a full build of 10,000 tools
//! 2 to 15 ms slower in the component (four alternating runs of `bench search-speed`). The
//! lookup is inlined into the analysis loop: the optimiser left it a call, and in the
//! component each call's entry also checks the epoch deadline (full build 63.0 -> 61.2 ms,
//! medians of four alternating runs of `bench search-speed --runs 10`).
//!
//! The slots are hashed with keys drawn per table from the system's random source (WASI's in
//! the component): the words are the registry's, and with a fixed hash anyone could compute
//! words that share a slot (20,280 such words in one description made a build of 10,000 tools
//! take 2 s instead of 76 ms). Only which slot a piece takes depends on the keys; what it
//! maps to, and so every ranking, does not.

use std::hash::BuildHasher;

use crate::keyed_hash::{Keyed, KeyedMap};

/// Pieces up to this many bytes are packed (the key's last byte holds the length).
const SHORT: usize = 15;

/// A stop word's entry.
const STOP: u32 = u32::MAX;

#[derive(Debug)]
pub(super) struct WordTerms {
    /// Packed keys and their terms; a zero key is an empty slot (a packed key's length is
    /// never zero). The length is a power of two, at most half full.
    slots: Vec<((u64, u64), u32)>,
    filled: usize,
    /// The hash's odd multipliers, drawn per table (see the module's text).
    seed: (u64, u64, u64),
    /// 64 less the table's size in bits: the slot is the hash's top bits.
    shift: u32,
    /// Longer pieces, in the plugin's keyed map for the same reason (few: most words are
    /// short).
    long: KeyedMap<Box<str>, Option<u32>>,
    /// Slots a lookup or insertion stepped past, for tests.
    #[cfg(test)]
    probes: std::cell::Cell<usize>,
}

impl Default for WordTerms {
    fn default() -> Self {
        let keys = Keyed::default();
        Self {
            slots: Vec::new(),
            filled: 0,
            seed: (
                keys.hash_one(0u8) | 1,
                keys.hash_one(1u8) | 1,
                keys.hash_one(2u8) | 1,
            ),
            shift: 64,
            long: KeyedMap::with_hasher(keys),
            #[cfg(test)]
            probes: std::cell::Cell::new(0),
        }
    }
}

impl WordTerms {
    /// What `piece` became: `Some(None)` for a stop word, `None` if never met.
    #[inline(always)]
    pub fn get(&self, piece: &str) -> Option<Option<u32>> {
        let Some(key) = pack(piece) else {
            return self.long.get(piece).copied();
        };
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = slot_of(key, self.seed, self.shift);
        while self.slots[at].0 != key && self.slots[at].0 != (0, 0) {
            at = (at + 1) & mask;
            #[cfg(test)]
            self.probes.set(self.probes.get() + 1);
        }
        let (found, term) = self.slots[at];
        (found == key).then_some((term != STOP).then_some(term))
    }

    /// How many pieces it holds.
    pub fn len(&self) -> usize {
        self.filled + self.long.len()
    }

    /// Records what `piece` became; a piece is inserted once.
    pub fn insert(&mut self, piece: &str, term: Option<u32>) {
        let Some(key) = pack(piece) else {
            self.long.insert(piece.into(), term);
            return;
        };
        if 2 * (self.filled + 1) > self.slots.len() {
            self.grow();
        }
        self.place(key, term.unwrap_or(STOP));
        self.filled += 1;
    }

    fn place(&mut self, key: (u64, u64), term: u32) {
        let mask = self.slots.len() - 1;
        let mut at = slot_of(key, self.seed, self.shift);
        while self.slots[at].0 != (0, 0) && self.slots[at].0 != key {
            at = (at + 1) & mask;
            #[cfg(test)]
            self.probes.set(self.probes.get() + 1);
        }
        self.slots[at] = (key, term);
    }

    fn grow(&mut self) {
        let size = (2 * self.slots.len()).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![((0, 0), 0); size]);
        self.shift = 64 - size.trailing_zeros();
        for (key, term) in old {
            if key != (0, 0) {
                self.place(key, term);
            }
        }
    }
}

/// The slot a key's probe starts at, in a table of `64 - shift` bits. Each half of the key
/// times its own odd multiplier, summed (multiply-shift, Dietzfelbinger et al.), then mixed
/// by two rounds of fold-and-multiply, as splitmix64 ends; the slot is the top bits. One round
/// alone is universal, but for keys that differ only in their last bytes, as words that differ
/// in their ending do, the sums differ only in their top bits, so a few bits of the multiplier
/// decide where such keys land, and some draws pile them up (see the test). The rounds after
/// it spread those bits over the whole word. Plain 64-bit arithmetic: as cheap in the
/// component as natively.
#[inline(always)]
fn slot_of((low, high): (u64, u64), (m0, m1, m2): (u64, u64, u64), shift: u32) -> usize {
    let sum = low.wrapping_mul(m0).wrapping_add(high.wrapping_mul(m1));
    let x = (sum ^ sum >> 32).wrapping_mul(m2);
    ((x ^ x >> 29).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> shift) as usize
}

/// The bytes of a short piece and its length in two integers: two pieces pack equal only
/// when they are equal. Read with a few overlapping loads, neither copied (in the component
/// a copy of a few bytes is a call out of the guest) nor read byte by byte.
#[inline(always)]
fn pack(piece: &str) -> Option<(u64, u64)> {
    let bytes = piece.as_bytes();
    let length = bytes.len();
    let (low, high) = match length {
        0 => return None,
        1..=3 => {
            let (first, middle, last) = (bytes[0], bytes[length / 2], bytes[length - 1]);
            let low = u64::from(first)
                | u64::from(middle) << (8 * (length / 2))
                | u64::from(last) << (8 * (length - 1));
            (low, 0)
        }
        4..=8 => {
            let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let tail = &bytes[length - 4..];
            let last = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
            // The two loads overlap for fewer than eight bytes; they agree where they do.
            (u64::from(first) | u64::from(last) << (8 * (length - 4)), 0)
        }
        9..=SHORT => {
            let word = |at: usize| {
                let mut eight = [0; 8];
                eight.copy_from_slice(&bytes[at..at + 8]);
                u64::from_le_bytes(eight)
            };
            // The last eight bytes, moved down past the ones the first load read.
            (word(0), word(length - 8) >> (8 * (16 - length)))
        }
        _ => return None,
    };
    Some((low, high | (length as u64) << 56))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_packs_as_its_bytes_and_length() {
        let text = "abcdefghijklmnopq";
        for length in 1..=SHORT {
            let piece = &text[..length];
            let mut bytes = [0u8; 16];
            bytes[..length].copy_from_slice(piece.as_bytes());
            bytes[15] = length as u8;
            let expected = (
                u64::from_le_bytes(bytes[..8].try_into().unwrap()),
                u64::from_le_bytes(bytes[8..].try_into().unwrap()),
            );
            assert_eq!(pack(piece), Some(expected), "{piece}");
        }
        assert_eq!((pack(""), pack(&text[..16])), (None, None));
    }

    #[test]
    fn pieces_are_found_as_inserted_short_or_long() {
        let mut terms = WordTerms::default();
        let mut pieces: Vec<String> = [
            "",
            "a",
            "a\0",
            "get",
            "gets",
            "fifteen_bytes__",
            "sixteen_bytes___",
            "股票",
            "股",
            "a_rather_long_word_of_many_bytes",
        ]
        .map(String::from)
        .into();
        // Enough to grow the table a few times.
        pieces.extend((0..5000).map(|i| format!("w{i}")));
        for (i, piece) in pieces.iter().enumerate() {
            assert_eq!(terms.get(piece), None);
            terms.insert(piece, (i % 3 != 0).then_some(i as u32));
        }
        for (i, piece) in pieces.iter().enumerate() {
            assert_eq!(
                terms.get(piece),
                Some((i % 3 != 0).then_some(i as u32)),
                "{piece}"
            );
        }
        assert_eq!(terms.get("ge"), None);
        assert_eq!(terms.get("sixteen_bytes__"), None);
        assert_eq!(terms.get("w5000"), None);
    }

    /// Probe steps to insert and then look up each of `words` once in a new table, whose
    /// hash keys are drawn anew.
    fn probe_steps(words: &[String]) -> usize {
        let mut terms = WordTerms::default();
        for (i, word) in words.iter().enumerate() {
            terms.insert(word, Some(i as u32));
        }
        for (i, word) in words.iter().enumerate() {
            assert_eq!(terms.get(word), Some(Some(i as u32)));
        }
        terms.probes.get()
    }

    /// Words that differ only in their last two bytes shared one slot under the unkeyed hash,
    /// whatever the table's size up to 2^16 slots: each insertion stepped past all the ones
    /// before (a flood of them in one description took a build from 76 ms to 2 s). Under
    /// one keyed round of multiply-shift they spread on most draws of the keys, but not on
    /// all: a few in a hundred piled up (median 205 steps, 99th percentile 12,230, worst
    /// 104,416 over 4,000 draws). With the second round: median 583, worst 873.
    #[test]
    fn words_built_to_collide_do_not_share_a_slot_whatever_the_keys() {
        let letters = b'a'..=b'z';
        let words: Vec<String> = letters
            .clone()
            .flat_map(|x| {
                letters
                    .clone()
                    .map(move |y| format!("qwerty{}{}", x as char, y as char))
            })
            .collect();
        // 676 words, each inserted and looked up once, in a table at most half full: about
        // one step each on average, not hundreds (unkeyed: 587,116), on every draw.
        let worst = (0..300).map(|_| probe_steps(&words)).max().unwrap();
        assert!(worst < 4 * words.len(), "{worst} probe steps");
    }
}
