//! Each distinct piece of text an index build has met (a lowercase word or a CJK gram) and
//! the term it became, so that each is stemmed and looked up once. Every token of every tool
//! is looked up here, so a short piece (most are) is its own key: its bytes and length packed
//! in one integer, hashed and compared without reading a string (in the component, comparing
//! strings calls wasi-libc's byte-by-byte `memcmp`).

use rustc_hash::FxHashMap;

/// Pieces up to this many bytes are packed (the key's last byte holds the length).
const SHORT: usize = 15;

#[derive(Debug, Default)]
pub(super) struct WordTerms {
    short: FxHashMap<(u64, u64), Option<u32>>,
    long: FxHashMap<Box<str>, Option<u32>>,
}

impl WordTerms {
    /// What `piece` became: `Some(None)` for a stop word, `None` if never met.
    pub fn get(&self, piece: &str) -> Option<Option<u32>> {
        match pack(piece) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(piece).copied(),
        }
    }

    pub fn insert(&mut self, piece: &str, term: Option<u32>) {
        match pack(piece) {
            Some(key) => {
                self.short.insert(key, term);
            }
            None => {
                self.long.insert(piece.into(), term);
            }
        }
    }
}

/// The bytes of a short piece and its length in two integers: two pieces pack equal only
/// when they are equal. Read by bytes and words, not copied: in the component a copy of a
/// few bytes is a call out of the guest (`memory.copy`).
fn pack(piece: &str) -> Option<(u64, u64)> {
    let bytes = piece.as_bytes();
    if bytes.len() > SHORT {
        return None;
    }
    let little_endian = |part: &[u8]| {
        let mut word = 0u64;
        for (i, &byte) in part.iter().enumerate() {
            word |= u64::from(byte) << (8 * i);
        }
        word
    };
    let (low, high) = match bytes.split_first_chunk::<8>() {
        Some((first, rest)) => (u64::from_le_bytes(*first), little_endian(rest)),
        None => (little_endian(bytes), 0),
    };
    Some((low, high | (bytes.len() as u64) << 56))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_found_as_inserted_short_or_long() {
        let mut terms = WordTerms::default();
        let pieces = [
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
        ];
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
    }
}
