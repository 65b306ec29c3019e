//! Eight bytes at a time, in one `u64` (SIMD within a register): the text scans of an index
//! build and of a token estimate read ten thousand tools' text this way, because in the
//! component a loop that tests one byte per turn also checks the epoch deadline per turn.

/// The high bit of each of eight bytes.
pub const HIGH: u64 = 0x8080_8080_8080_8080;

/// `b` in each of eight bytes.
const fn each(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// Whether any of eight bytes is below `n`, for `n` at most 0x80: `x - n` sets the high bit of
/// the first byte of `x` below `n`, which `!x` keeps.
pub fn any_below(chunk: u64, n: u8) -> bool {
    chunk.wrapping_sub(each(n)) & !chunk & HIGH != 0
}

/// Whether any of eight bytes is `b`.
pub fn holds(chunk: u64, b: u8) -> bool {
    any_below(chunk ^ each(b), 1)
}

/// The high bit of each byte of `chunk` that is in `lo..=hi`, for a chunk of ASCII bytes (no
/// high bit set): then no subtraction borrows from the next byte.
pub fn in_range(chunk: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = (chunk | HIGH) - each(lo);
    let at_most_hi = (each(hi) | HIGH) - chunk;
    at_least_lo & at_most_hi & HIGH
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_below_and_holds_read_bytes_as_their_values(
            bytes in any::<[u8; 8]>(),
            n in 0u8..=0x80,
            b in any::<u8>(),
        ) {
            let chunk = u64::from_le_bytes(bytes);
            prop_assert_eq!(any_below(chunk, n), bytes.iter().any(|&x| x < n));
            prop_assert_eq!(holds(chunk, b), bytes.contains(&b));
        }

        #[test]
        fn in_range_marks_each_ascii_byte_in_the_range(
            bytes in any::<[u8; 8]>(),
            lo in 0u8..0x80,
            hi in 0u8..0x80,
        ) {
            let bytes = bytes.map(|x| x & 0x7F);
            let marked = in_range(u64::from_le_bytes(bytes), lo, hi).to_le_bytes();
            for (x, mark) in bytes.iter().zip(marked) {
                prop_assert_eq!(mark == 0x80, (lo..=hi).contains(x));
            }
        }
    }
}
