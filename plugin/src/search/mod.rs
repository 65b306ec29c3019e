//! Ranking tools for `tool_search`: BM25F over a tool's weighted fields (see [`fields`]), with
//! English stemming, CJK unigrams and bigrams, a bilingual vocabulary of tool jargon, CC-CEDICT
//! glosses and WordNet synonyms (`lexicon`), name-prefix and typo matches, and an exact
//! whole-name match ranked first.
//!
//! The index is built once per registry change; a query only reads it. Each posting holds a
//! term's whole BM25F contribution to one tool, or to one group (MCP server) whose name and
//! description are indexed once for all its tools; a query sums postings and nothing else.
//!
//! Modules use each other one way: `rank` parses with `query` and reads `index`; `query`
//! reads the term `dictionary`, `vocab` and `lexicon`; `build` fills `index` with `bm25`'s formulas; the index
//! knows nothing of queries.

mod analyze;
mod bm25;
mod build;
mod dictionary;
mod fields;
mod index;
mod lexicon;
mod names;
mod query;
mod rank;
mod rows;
mod schema;
mod vocab;

pub use analyze::{Analyzer, Token, TokenKind, analyzer};
pub use index::SearchIndex;
pub use vocab::{VocabError, Vocabulary};

#[cfg(test)]
mod tests;
