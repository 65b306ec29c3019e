//! The CLI's commands, as library functions so tests can run them.

pub mod args;
pub mod bench;
pub mod demo;
pub mod explain;
pub mod plugin;
pub mod search;
pub mod session;
mod signals;
pub mod tokens;

/// `text` cut to its first `max` characters, with `…` where it was cut: one line of a listing.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
