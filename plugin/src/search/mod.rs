//! Ranking tools for `tool_search`: BM25F over a tool's weighted fields (see [`fields`]), with
//! English stemming, CJK unigrams and bigrams, a bilingual vocabulary of tool jargon, CC-CEDICT
//! glosses and WordNet synonyms (`lexicon`), name-prefix and typo matches, and an exact
//! whole-name match ranked first.
//!
//! The index is built once, then grown by each registry change (see `update`: a full build
//! again only when much has changed); a query only reads it. Each posting holds a term's
//! saturated frequency in one tool, or in one group (MCP server) whose name and description
//! are indexed once for all its tools; times the term's idf, kept apart so an update rewrites
//! one number per term, it is the term's BM25F score there. A query multiplies and sums.
//!
//! Modules use each other one way: `rank` parses with `query` and reads `index`; `query`
//! reads the term `dictionary`, `vocab` and `lexicon`; `build` and `update` fill `index` with
//! the tools `documents` analyses, `bm25`'s formulas and `holders`' idf, and `update` with
//! `build`'s helpers; `index` holds `growth` (what an update keeps), which holds the
//! `documents` builder; the index knows nothing of queries.

mod analyze;
mod bm25;
mod build;
mod dictionary;
mod documents;
mod explain;
mod fields;
mod growth;
mod holders;
mod index;
mod initials;
mod lexicon;
mod names;
mod query;
mod rank;
mod rows;
mod schema;
mod update;
mod vocab;
mod word_terms;
mod written_names;

pub use analyze::{Analyzer, Token, TokenKind, analyzer};
pub use explain::{Explanation, Share, Slot, WeightedTerm};
pub use index::SearchIndex;
pub use update::{MAX_CHURN, Updated};
pub use vocab::{VocabError, Vocabulary};

#[cfg(test)]
mod tests;
