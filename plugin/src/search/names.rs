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
    if text.is_ascii() {
        for b in text.bytes() {
            if b.is_ascii_alphanumeric() {
                out.push(b.to_ascii_lowercase() as char);
            } else if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
        }
        if out.ends_with('_') {
            out.pop();
        }
        return;
    }
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    if out.ends_with('_') {
        out.pop();
    }
}

/// Hashes, not strings, are kept for ten thousand names: a match is checked against the name.
pub fn hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(text)
}
