//! Whole names as a person might type them, for exact-name matches: a query that is a tool's
//! name (`GitHub create-issue`) finds it first.

/// A name as a person might type it: lowercase, any run of separators as one `_`.
pub fn normalise_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalise_name_into(text, &mut out);
    out
}

pub fn normalise_name_into(text: &str, out: &mut String) {
    out.clear();
    let text = text.trim();
    // ASCII text (most names) is lowercased byte by byte, with no char decoding.
    if text.is_ascii() {
        for b in text.bytes() {
            push_name_char(char::from(b.to_ascii_lowercase()), out);
        }
    } else {
        for c in text.chars().flat_map(char::to_lowercase) {
            push_name_char(c, out);
        }
    }
    if out.ends_with('_') {
        out.pop();
    }
}

/// Appends lowercase `c` to a name being normalised: a letter or digit as it is, a separator
/// as one `_` between words.
fn push_name_char(c: char, out: &mut String) {
    if c.is_alphanumeric() {
        out.push(c);
    } else if !out.is_empty() && !out.ends_with('_') {
        out.push('_');
    }
}

/// The key an exact match looks a name up by: a hash of `normalise_name(text)` (hashes, not
/// strings, are kept for ten thousand names; a match is checked against the name). Computed
/// without writing the normalised name for ASCII text: an index build keys every tool's
/// whole name and own name.
pub fn name_key(text: &str) -> u64 {
    if !text.is_ascii() {
        return normalise_name(text).bytes().fold(KEY_START, key_step);
    }
    // The bytes `normalise_name_into` writes: a run of separators is one `_` between words.
    let mut key = KEY_START;
    let (mut started, mut separated) = (false, false);
    for b in text.bytes() {
        if !b.is_ascii_alphanumeric() {
            separated = started;
            continue;
        }
        if std::mem::take(&mut separated) {
            key = key_step(key, b'_');
        }
        key = key_step(key, b.to_ascii_lowercase());
        started = true;
    }
    key
}

/// FNV-1a, a byte at a time.
const KEY_START: u64 = 0xcbf2_9ce4_8422_2325;

fn key_step(key: u64, byte: u8) -> u64 {
    (key ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
}

/// A text's hash (a group description's, to tell when the shell describes a group anew).
pub fn hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(text)
}
