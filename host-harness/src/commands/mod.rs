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
