//! "Did you mean": the closest known word to a misspelt one.

/// The candidate most like `word` (case-insensitive Jaro-Winkler, the same
/// measure the plugin uses for its config keys), when it is close enough to
/// be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .into_iter()
        .map(|known| (strsim::jaro_winkler(&word, &known.to_lowercase()), known))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

/// `; did you mean `x`?` or nothing, to append to a message.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|known| format!("; did you mean `{known}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_close_words() {
        let keys = ["id", "name", "config", "disabled"];
        assert_eq!(closest("confg", keys), Some("config"));
        assert_eq!(closest("Disabled", keys), Some("disabled"));
        assert_eq!(closest("source", keys), None);
        assert_eq!(did_you_mean("nmae", keys), "; did you mean `name`?");
        assert_eq!(did_you_mean("zzz", keys), "");
    }
}
