//! BM25F's constants and formulas, in one place: the index build saturates each posting's term
//! frequency once and keeps each term's idf apart, so a query only multiplies and sums, and an
//! update that changes a term's document frequency rewrites one number, not its postings.

use super::fields::Field;

/// Term-frequency saturation.
pub const K1: f32 = 1.2;

/// How much a field's length counts against a term in it (BM25's `b`): names are short and
/// their length says little.
pub fn length_normalisation(field: Field) -> f32 {
    match field {
        Field::Name | Field::GroupName => 0.3,
        _ => 0.75,
    }
}

/// Whether `field`'s average length is taken over the documents that hold it, as Lucene's BM25
/// averages every field, rather than over every document with text. A shell enriches the few
/// tools it knows more of: over 10,000 tools, three tools' keywords average near zero, a tool
/// that has some reads as thousands of times longer there than average, and its keywords count
/// for nothing. The tool's own fields keep the average over every tool, which the constants
/// were set with (each averaged over its holders, five query sets lost a query at five and two
/// gained one).
pub fn averaged_over_holders(field: Field) -> bool {
    field == Field::Enrichment
}

/// What one occurrence of a term in `field` adds to the document's weighted term frequency,
/// given the field's length in the document and its average length.
pub fn field_norm(field: Field, length: u32, average: f32) -> f32 {
    let b = length_normalisation(field);
    let relative = if average > 0.0 {
        length as f32 / average
    } else {
        1.0
    };
    field.weight() / (1.0 - b + b * relative)
}

/// Inverse document frequency of a term that `df` of `n` documents hold. An updated index
/// keeps its last full build's `n` while tools join, so a term nearly every tool holds can
/// have more holders than `n`: it counts as held by all, a little above nothing, never below
/// (a negative idf took score from the tools that hold the term).
pub fn idf(n: usize, df: usize) -> f32 {
    let (n, df) = (n.max(df) as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The part of a term's score in a document that its weighted term frequency gives: the score
/// is this times the term's idf.
pub fn saturate(tf: f32) -> f32 {
    tf * (K1 + 1.0) / (K1 + tf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rarer_term_or_one_more_often_present_scores_more() {
        assert!(idf(1000, 1) > idf(1000, 10));
        assert!(idf(1000, 1000) > 0.0);
        // More holders than documents counted (an update's tools since its last full build).
        assert!(idf(25, 26) > 0.0 && idf(25, 26) < idf(25, 25));
        let one = saturate(1.0);
        assert!(saturate(2.0) > one);
        // Saturation: twice the frequency is less than twice the score.
        assert!(saturate(2.0) < 2.0 * one);
        // A field longer than average weighs each occurrence less.
        assert!(field_norm(Field::Description, 20, 10.0) < field_norm(Field::Description, 5, 10.0));
    }
}
