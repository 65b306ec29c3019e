//! "Did you mean": the one measure every hint uses, in the plugin (config
//! keys, tool names in guard results) and in the harness (profile keys,
//! plugin ids, session commands).

/// How alike two words must be (case-insensitive Jaro-Winkler) for one to
/// be offered as the likely intended spelling of the other.
const THRESHOLD: f64 = 0.8;

/// The candidate most like `word`, when one is close enough to be a likely
/// typo. Ties go to the smaller candidate, so a hint never depends on the
/// order the candidates come in.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .into_iter()
        .map(|known| (strsim::jaro_winkler(&word, &known.to_lowercase()), known))
        .filter(|(score, _)| *score > THRESHOLD)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
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

    #[test]
    fn ties_do_not_depend_on_order() {
        assert_eq!(closest("ab_x", ["ab_y", "ab_z"]), Some("ab_y"));
        assert_eq!(closest("ab_x", ["ab_z", "ab_y"]), Some("ab_y"));
    }

    #[test]
    fn config_keys_and_tool_names() {
        assert_eq!(closest("noDefr", ["defer", "noDefer"]), Some("noDefer"));
        assert_eq!(
            closest(
                "github__create_isue",
                ["github__create_issue", "slack__post"]
            ),
            Some("github__create_issue")
        );
    }
}
