//! Tool-name patterns: `*` is the only wildcard, every other character is
//! literal (`?`, `[`, `{` and `\` included), and a pattern matches the whole
//! name.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// The longest pattern accepted, in characters: tool names are short, and a
/// pattern's compiled size grows with its length.
pub const MAX_PATTERN_CHARS: usize = 1_000;

/// One compiled pattern, with the text the user wrote.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    /// A set of one: building a set reports a regex that cannot be built,
    /// where `Glob::compile_matcher` panics (and the plugin would trap).
    matcher: GlobSet,
}

impl Pattern {
    /// Compiles `text`; a pattern too long or that globset cannot build is
    /// an error, never a panic.
    pub fn new(text: &str) -> Result<Self, String> {
        let glob = to_glob(text)?;
        let matcher = GlobSetBuilder::new()
            .add(glob)
            .build()
            .map_err(|e| format!("pattern cannot be compiled: {e}"))?;
        Ok(Self {
            text: text.to_string(),
            matcher,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_match(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

/// Several patterns tested in the order they were added; reports the first that matches.
#[derive(Debug, Clone, Default)]
pub struct PatternSet {
    shapes: Vec<Shape>,
}

/// What a pattern takes to match. The common ones (`*`, `mcp__github__*`, `read`,
/// `*browser_*`) are tested on the name itself: a first fetch classifies every tool against
/// every list, and in the component globset's regex for `*` made up most of that.
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
    fn of(pattern: &Pattern) -> Self {
        let text = pattern.text();
        let after_lead = text.trim_start_matches('*');
        let literal = after_lead.trim_end_matches('*');
        let (lead, trail) = (
            after_lead.len() < text.len(),
            literal.len() < after_lead.len(),
        );
        if literal.contains('*') {
            return Shape::Glob(pattern.matcher.clone());
        }
        match (lead, trail) {
            // No star at all (the empty pattern too: it matches the empty name only).
            (false, false) => Shape::Exact(text.to_string()),
            _ if literal.is_empty() => Shape::Any,
            (false, true) => Shape::Prefix(literal.to_string()),
            (true, false) => Shape::Suffix(literal.to_string()),
            (true, true) => Shape::Contains(literal.to_string()),
        }
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
            shapes: patterns.into_iter().map(Shape::of).collect(),
        }
    }

    /// The index of the first pattern that matches `name`.
    pub fn first_match(&self, name: &str) -> Option<usize> {
        self.shapes.iter().position(|shape| shape.is_match(name))
    }
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
