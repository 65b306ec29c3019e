//! Tool-name patterns: `*` is the only wildcard, every other character is
//! literal (`?`, `[`, `{` and `\` included), and a pattern matches the whole
//! name.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// The longest pattern accepted, in characters: tool names are short, and a
/// pattern's compiled size grows with its length.
pub const MAX_PATTERN_CHARS: usize = 1_000;

/// One compiled pattern: what it takes to match (only a star inside the pattern compiles a
/// glob, a regex). The text the user wrote is kept by whoever holds the pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    shape: Shape,
}

impl Pattern {
    /// Compiles `text`; a pattern too long or that globset cannot build is
    /// an error, never a panic.
    pub fn new(text: &str) -> Result<Self, String> {
        let glob = to_glob(text)?;
        let shape = Shape::of(text, || {
            // A set of one: building a set reports a regex that cannot be built,
            // where `Glob::compile_matcher` panics (and the plugin would trap).
            GlobSetBuilder::new()
                .add(glob)
                .build()
                .map_err(|e| format!("pattern cannot be compiled: {e}"))
        })?;
        Ok(Self { shape })
    }

    /// What [`Pattern::new`] would say of `text`, without compiling it: nothing is kept.
    pub fn check(text: &str) -> Result<(), String> {
        to_glob(text).map(drop)
    }

    pub fn is_match(&self, name: &str) -> bool {
        self.shape.is_match(name)
    }
}

/// Several patterns tested in the order they were added; reports the first that matches.
#[derive(Debug, Clone, Default)]
pub struct PatternSet {
    shapes: Vec<Shape>,
}

/// What a pattern takes to match. The common ones (`*`, `mcp__github__*`, `read`,
/// `*browser_*`) are tested on the name itself: a first fetch classifies every tool against
/// every list, and in the component globset's regex for `*` made up most of that; and a
/// config of thousands of names would have kept thousands of compiled globs.
#[derive(Debug, Clone)]
enum Shape {
    Any,
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    /// A star inside the pattern: the pattern's own compiled glob.
    Glob(GlobSet),
}

impl Shape {
    /// The shape of `text`; `glob` compiles it, called only for a star inside.
    fn of(text: &str, glob: impl FnOnce() -> Result<GlobSet, String>) -> Result<Self, String> {
        let after_lead = text.trim_start_matches('*');
        let literal = after_lead.trim_end_matches('*');
        let (lead, trail) = (
            after_lead.len() < text.len(),
            literal.len() < after_lead.len(),
        );
        if needs_glob(text) {
            return glob().map(Shape::Glob);
        }
        Ok(match (lead, trail) {
            // No star at all (the empty pattern too: it matches the empty name only).
            (false, false) => Shape::Exact(text.to_string()),
            _ if literal.is_empty() => Shape::Any,
            (false, true) => Shape::Prefix(literal.to_string()),
            (true, false) => Shape::Suffix(literal.to_string()),
            (true, true) => Shape::Contains(literal.to_string()),
        })
    }

    fn is_match(&self, name: &str) -> bool {
        match self {
            Shape::Any => true,
            Shape::Exact(text) => name == text,
            Shape::Prefix(prefix) => name.starts_with(prefix.as_str()),
            Shape::Suffix(suffix) => name.ends_with(suffix.as_str()),
            Shape::Contains(part) => name.contains(part.as_str()),
            Shape::Glob(glob) => glob.is_match(name),
        }
    }
}

impl PatternSet {
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a Pattern>) -> Self {
        Self {
            shapes: patterns.into_iter().map(|p| p.shape.clone()).collect(),
        }
    }

    /// The index of the first pattern that matches `name`.
    pub fn first_match(&self, name: &str) -> Option<usize> {
        self.shapes.iter().position(|shape| shape.is_match(name))
    }
}

/// Whether the pattern `text` compiles a glob (a regex): a `*` inside it, not only at its ends.
pub fn needs_glob(text: &str) -> bool {
    text.trim_matches('*').contains('*')
}

fn to_glob(text: &str) -> Result<Glob, String> {
    let chars = text.chars().count();
    if chars > MAX_PATTERN_CHARS {
        return Err(format!(
            "pattern of {chars} characters; at most {MAX_PATTERN_CHARS}"
        ));
    }
    // Escape each literal run, keep `*` as the wildcard. Runs of `*` collapse
    // to one: globset gives `**` a path meaning that tool names do not have.
    let mut glob = String::with_capacity(text.len() + 8);
    for (i, literal) in text.split('*').enumerate() {
        if i > 0 && !glob.ends_with('*') {
            glob.push('*');
        }
        glob.push_str(&globset::escape(literal));
    }
    GlobBuilder::new(&glob)
        .literal_separator(false)
        .backslash_escape(false)
        .build()
        .map_err(|e| format!("pattern `{text}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        Pattern::new(pattern).unwrap().is_match(name)
    }

    #[test]
    fn star_is_the_only_wildcard() {
        assert!(matches("*", "anything/at all"));
        assert!(matches("browser_*", "browser_click"));
        assert!(!matches("browser_*", "xbrowser_click"));
        assert!(matches("*_search", "web_search"));
        assert!(matches("a**b", "axxb"));
        assert!(matches("get_*_by_*", "get_user_by_id"));
    }

    #[test]
    fn other_glob_characters_are_literal() {
        assert!(matches("a?c", "a?c"));
        assert!(!matches("a?c", "abc"));
        assert!(matches("[ab]", "[ab]"));
        assert!(!matches("[ab]", "a"));
        assert!(matches("{a,b}", "{a,b}"));
        assert!(!matches("{a,b}", "a"));
        assert!(matches(r"a\*", r"a\xyz"));
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "axb"));
    }

    #[test]
    fn whole_name_only() {
        assert!(!matches("read", "read_file"));
        assert!(!matches("read", "unread"));
    }

    proptest::proptest! {
        /// Without `*`, a pattern matches exactly its own text, whatever
        /// characters it holds.
        #[test]
        fn literal_patterns_match_only_themselves(text in "[^*]{1,12}", other in "[^*]{0,12}") {
            let pattern = Pattern::new(&text).unwrap();
            proptest::prop_assert!(pattern.is_match(&text));
            proptest::prop_assert_eq!(pattern.is_match(&other), other == text);
        }

        /// `prefix*` matches every name that starts with the prefix.
        #[test]
        fn star_matches_any_suffix(prefix in "[^*]{0,8}", suffix in ".{0,8}") {
            let pattern = Pattern::new(&format!("{prefix}*")).unwrap();
            let name = format!("{prefix}{suffix}");
            proptest::prop_assert!(pattern.is_match(&name));
        }
    }

    proptest::proptest! {
        /// A set reports the first pattern that matches on its own, whatever the patterns'
        /// shapes (`*`, literal, prefix, or stars anywhere) and glob characters (literal).
        #[test]
        fn a_set_reports_the_first_pattern_that_matches_alone(
            texts in proptest::collection::vec(r"[ab_?\[\]{},\\*]{0,5}", 0..6),
            name in r"[ab_?\[\]{},\\]{0,6}",
        ) {
            let patterns: Vec<Pattern> = texts.iter().map(|t| Pattern::new(t).unwrap()).collect();
            let set = PatternSet::new(&patterns);
            let alone = patterns.iter().position(|p| p.is_match(&name));
            proptest::prop_assert_eq!(set.first_match(&name), alone);
        }
    }

    /// What a pattern means, said the slow way: `*` takes any run of characters, every other
    /// character itself, and the pattern covers the whole name.
    fn reference(pattern: &[char], name: &[char]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some(('*', rest)) => (0..=name.len()).any(|i| reference(rest, &name[i..])),
            Some((c, rest)) => name.first() == Some(c) && reference(rest, &name[1..]),
        }
    }

    /// The pattern's glob, compiled whatever its shape: how every pattern matched before the
    /// shapes.
    fn glob_alone(text: &str) -> GlobSet {
        GlobSetBuilder::new()
            .add(to_glob(text).unwrap())
            .build()
            .unwrap()
    }

    proptest::proptest! {
        /// A pattern matches as the reference says, whatever its shape and characters (glob
        /// characters, `.`, `/`, line breaks and non-ASCII included).
        #[test]
        fn a_pattern_matches_as_the_reference_does(
            text in r"[ab_.?\[\]{},\\/\né*]{0,6}",
            name in r"[ab_.?\[\]{},\\/\né]{0,7}",
        ) {
            let chars = |s: &str| s.chars().collect::<Vec<_>>();
            let pattern = Pattern::new(&text).unwrap();
            proptest::prop_assert_eq!(
                pattern.is_match(&name),
                reference(&chars(&text), &chars(&name))
            );
        }

        /// A pattern matches as its own compiled glob did when every pattern had one (`.`
        /// aside: see `a_star_then_a_dot_matches_a_name_that_ends_in_two_dots`).
        #[test]
        fn a_pattern_matches_as_its_glob_did(
            text in r"[ab_?\[\]{},\\/\né*]{0,6}",
            name in r"[ab_?\[\]{},\\/\né]{0,7}",
        ) {
            let pattern = Pattern::new(&text).unwrap();
            proptest::prop_assert_eq!(pattern.is_match(&name), glob_alone(&text).is_match(&name));
        }
    }

    #[test]
    fn a_star_then_a_dot_matches_a_name_that_ends_in_two_dots() {
        // globset reads `*.` as "the file's extension is empty" and a name that ends in `/..`
        // or is `..` as having no file name: its glob said no. The pattern says yes, as `*`
        // means and as the rules' sets already said.
        for name in ["..", "a/..", "x.."] {
            assert!(matches("*.", name), "{name}");
        }
        assert!(!glob_alone("*.").is_match(".."));
    }

    #[test]
    fn only_a_star_inside_compiles_a_glob() {
        for (text, glob) in [
            ("read", false),
            ("", false),
            ("*", false),
            ("**", false),
            ("mcp__github__*", false),
            ("*_search", false),
            ("*browser_*", false),
            ("get_*_by_*", true),
            ("3*7", true),
        ] {
            let shape = Pattern::new(text).unwrap().shape;
            assert_eq!(matches!(shape, Shape::Glob(_)), glob, "{text:?}");
        }
    }

    #[test]
    fn check_says_what_new_would() {
        assert_eq!(Pattern::check("a*b"), Ok(()));
        let huge = "a".repeat(MAX_PATTERN_CHARS + 1);
        assert_eq!(
            Pattern::check(&huge).unwrap_err(),
            Pattern::new(&huge).unwrap_err()
        );
    }

    #[test]
    fn a_huge_pattern_is_an_error_not_a_panic() {
        // 700,000 characters made globset's regex build fail, and
        // `compile_matcher` panicked: the plugin trapped on its config.
        let huge = "a*".repeat(350_000);
        let err = Pattern::new(&huge).unwrap_err();
        assert_eq!(err, "pattern of 700000 characters; at most 1000");
        let longest = "b".repeat(MAX_PATTERN_CHARS);
        assert!(Pattern::new(&longest).unwrap().is_match(&longest));
    }

    #[test]
    fn set_reports_first_matching_pattern() {
        let patterns: Vec<_> = ["x_*", "*", "a"]
            .iter()
            .map(|p| Pattern::new(p).unwrap())
            .collect();
        let set = PatternSet::new(&patterns);
        assert_eq!(set.first_match("x_1"), Some(0));
        assert_eq!(set.first_match("a"), Some(1));
        assert_eq!(PatternSet::new(&[]).first_match("a"), None);
    }
}
