//! What a query's text names by how it is written, whatever its words mean: a file's name
//! (`lease.docx`), a path on the user's machine (`/srv/media/uploads`), a proper name of several
//! capitalized words (`the Sydney Opera House`). The query reads the kinds these imply
//! (`lexicon::kinds`) or holds back the ones they rule out.

use std::cell::OnceCell;

use rustc_hash::FxHashSet;

use super::analyze::{analyzer, is_cjk};

/// File names read from one query at most: a request names a few files, and each costs a
/// lookup and a slot.
const MAX_FILE_NAMES: usize = 8;

/// A word of the text with what punctuation stands on either side of it.
struct Word<'t> {
    word: &'t str,
    /// Punctuation before it (`(Opera`): a name does not run across it.
    opened: bool,
    /// Punctuation after it (`House,`): nor across this.
    closed: bool,
    /// A sentence's end after it (`House.`).
    ends_sentence: bool,
}

/// The text's words (whitespace apart, Chinese characters too), each without the punctuation
/// around it.
fn words(text: &str) -> impl Iterator<Item = Word<'_>> {
    let punctuation = |c: char| !c.is_alphanumeric();
    text.split(|c: char| c.is_whitespace() || is_cjk(c))
        .filter(|chunk| !chunk.is_empty())
        .map(move |chunk| {
            let after_lead = chunk.trim_start_matches(punctuation);
            let word = after_lead.trim_end_matches(punctuation);
            let trail = &after_lead[word.len()..];
            Word {
                word,
                opened: after_lead.len() < chunk.len(),
                closed: !trail.is_empty(),
                ends_sentence: trail.contains(['.', '!', '?', '。', '！', '？']),
            }
        })
}

/// A character of a file's name before its extension (`report_v2-final`, `document (1)`).
fn in_a_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | ')')
}

/// The extensions of the file names in `lower`, each once, at most [`MAX_FILE_NAMES`]: one to
/// five ASCII letters or digits after a dot that follows a character of the name, ending the
/// name (`lease.docx`, `周报.docx上的`, `https://x.net/sign_0412.png?`; not `x.png_old`, nor a
/// host's `arxiv.org/pdf`). Other hosts' and numbers' dots (`wikipedia.org`, `3.5`) find no kind
/// in the table, which leaves out the internet's domain endings.
pub(super) fn file_extensions(lower: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    let mut met: FxHashSet<&str> = FxHashSet::default();
    for (dot, _) in lower.match_indices('.') {
        let named = lower[..dot].chars().next_back().is_some_and(in_a_name);
        let rest = &lower[dot + 1..];
        let len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        // Not a host's name (`arxiv.org/pdf`, `localhost.dev:8080`).
        let ends = rest[len..]
            .chars()
            .next()
            .is_none_or(|c| !(in_a_name(c) || matches!(c, '/' | ':')) || is_cjk(c));
        if named && (1..=5).contains(&len) && ends && met.insert(&rest[..len]) {
            found.push(&rest[..len]);
            if found.len() == MAX_FILE_NAMES {
                break;
            }
        }
    }
    found
}

/// Whether `lower` names a directory on the user's machine: a path from `~/`, `./` or `../`,
/// or one of two parts or more from `/` (not `/help`), whose last part has no extension and
/// does not begin with a dot (`/srv/media/uploads`, `~/projects/`; not `~/notes/todo.txt` nor
/// `~/.bashrc`, files). A file with no extension at all (`/etc/hosts`) reads as a directory
/// too, and so does an API's path (`/api/v1/users`).
pub(super) fn names_a_directory(lower: &str) -> bool {
    lower
        .split(|c: char| c.is_whitespace() || is_cjk(c))
        .any(|word| {
            let path = word.trim_matches(|c: char| !(c.is_alphanumeric() || "/~._-".contains(c)));
            let inner = path.trim_end_matches('/');
            let parts = inner.split('/').filter(|p| !p.is_empty()).count();
            let rooted = ["~/", "./", "../"].iter().any(|r| path.starts_with(r))
                || path.starts_with('/') && parts >= 2;
            let last = inner.rsplit_once('/').map(|(_, last)| last);
            rooted
                && last.is_some_and(|last| {
                    !last.is_empty() && !last.starts_with('.') && !last.contains('.')
                })
        })
}

/// The text's words, lowercased, each marked when it comes before the last word of a longer
/// capitalized name: a run of two or more capitalized words, none a stop word (`Weather In
/// Tokyo` is a title, not a name), three when the run begins a sentence (`From Sydney` is no
/// name), ending at punctuation; none in a text that capitalizes a stop word of two letters or
/// more inside a sentence (a title's style). `Sydney` and `Opera` of `the Sydney Opera House`
/// are marked; `Dollars` of `Hong Kong Dollars`, the name's head, is not.
fn name_modifiers(text: &str) -> Vec<(String, bool)> {
    let mut marked: Vec<(String, bool)> = Vec::new();
    // Where the current run begins in `marked`, and whether it began a sentence.
    let mut run: Option<(usize, bool)> = None;
    let mut sentence_starts = true;
    // Whether the text capitalizes a stop word inside a sentence (`Will It Rain In Oslo
    // Tomorrow`): it capitalizes for style, and its capitals say nothing.
    let mut titled = false;
    let close = |marked: &mut Vec<(String, bool)>, run: &mut Option<(usize, bool)>| {
        if let Some((start, initial)) = run.take() {
            let end = marked.len();
            if end - start >= if initial { 3 } else { 2 } {
                for (_, modifier) in &mut marked[start..end - 1] {
                    *modifier = true;
                }
            }
        }
    };
    for Word {
        word,
        opened,
        closed,
        ends_sentence,
    } in words(text)
    {
        let lower = word.to_lowercase();
        let upper = word.chars().next().is_some_and(char::is_uppercase);
        let stop = upper && analyzer().is_stop_word(&lower);
        titled |= stop && !sentence_starts && word.chars().nth(1).is_some();
        let capitalized = upper && !stop;
        if !capitalized || opened {
            close(&mut marked, &mut run);
        }
        if capitalized && run.is_none() {
            run = Some((marked.len(), sentence_starts));
        }
        marked.push((lower, false));
        sentence_starts = ends_sentence;
        if closed {
            close(&mut marked, &mut run);
        }
    }
    close(&mut marked, &mut run);
    if titled {
        marked.clear();
    }
    marked
}

/// A query's longer capitalized names ([`name_modifiers`]), read the first time a word that
/// names something asks: most queries name nothing, and pay nothing for it.
pub(super) struct LongerNames<'t> {
    text: &'t str,
    marked: OnceCell<Vec<(String, bool)>>,
}

impl<'t> LongerNames<'t> {
    pub(super) fn of(text: &'t str) -> Self {
        Self {
            text,
            marked: OnceCell::new(),
        }
    }

    /// Whether what `words` name is held back: every occurrence of them comes before the last
    /// word of a longer name ([`only_inside_longer_names`]).
    pub(super) fn hold_back(&self, words: &[&str]) -> bool {
        let marked = self.marked.get_or_init(|| name_modifiers(self.text));
        only_inside_longer_names(marked, words)
    }
}

/// Whether `words` occur in `marked` ([`name_modifiers`]) and every occurrence ends before the
/// last word of a longer name: `sydney` in `walk to the Sydney Opera House`, but not in `from
/// Sydney, walk to the Sydney Opera House`.
fn only_inside_longer_names(marked: &[(String, bool)], words: &[&str]) -> bool {
    let mut occurrences = marked
        .windows(words.len())
        .filter(|part| part.iter().map(|(w, _)| w).eq(words))
        .peekable();
    occurrences.peek().is_some() && occurrences.all(|part| part[part.len() - 1].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modifiers(text: &str) -> Vec<String> {
        let marked = name_modifiers(text);
        marked
            .into_iter()
            .filter(|(_, modifier)| *modifier)
            .map(|(word, _)| word)
            .collect()
    }

    #[test]
    fn a_longer_capitalized_name_marks_the_words_before_its_last() {
        assert_eq!(
            modifiers("walk to the Sydney Opera House."),
            ["sydney", "opera"]
        );
        // Its head keeps what it is: the Hong Kong dollar is a currency.
        assert_eq!(
            modifiers("convert 100 Hong Kong Dollars to yen"),
            ["hong", "kong"]
        );
        // A sentence's first word is capitalized anyway; a title capitalizes every word.
        for text in [
            "Sydney weather. Tokyo Tower",
            "Weather In Tokyo",
            "Get Weather For London",
            "Will It Rain In Oslo Tomorrow",
            "walk in sydney opera house",
        ] {
            assert_eq!(modifiers(text), Vec::<String>::new(), "{text}");
        }
        assert_eq!(modifiers("Sydney Opera House tours"), ["sydney", "opera"]);
    }

    #[test]
    fn a_name_is_held_back_only_where_every_occurrence_is_inside_a_longer_one() {
        let marked = name_modifiers("walk to the Sydney Opera House, then fly to New York");
        assert!(only_inside_longer_names(&marked, &["sydney"]));
        // The name itself, or what the text does not say, is not inside a longer one.
        assert!(!only_inside_longer_names(&marked, &["new", "york"]));
        assert!(!only_inside_longer_names(&marked, &["oslo"]));
        let marked = name_modifiers("From Sydney, walk to the Sydney Opera House");
        assert!(!only_inside_longer_names(&marked, &["sydney"]));
    }

    #[test]
    fn a_files_extension_is_read_where_it_ends_a_name() {
        assert_eq!(
            file_extensions("put team.jpg into report.docx, and team.jpg again"),
            ["jpg", "docx"]
        );
        assert_eq!(file_extensions("把周报.docx转成pdf"), ["docx"]);
        assert_eq!(file_extensions("open document (1).pdf"), ["pdf"]);
        assert_eq!(
            file_extensions("https://cdn.example.net/sign_0412.png?"),
            ["png"]
        );
        // A dot that no name comes before, or an extension run on into a longer name.
        for text in [
            "see .docx files",
            "v2.docxfile",
            "a sentence. docx",
            "x.toolong",
            "x.png_old",
            "https://t.me/channel",
            "localhost.md:8080",
        ] {
            assert_eq!(file_extensions(text), Vec::<&str>::new(), "{text}");
        }
        let many: String = (0..100).map(|i| format!("f.e{i} ")).collect();
        assert_eq!(file_extensions(&many).len(), MAX_FILE_NAMES);
    }

    #[test]
    fn a_rooted_path_without_an_extension_names_a_directory() {
        for text in [
            "archive /srv/media/uploads first",
            "在 ~/projects 下面找",
            "看看/srv/media目录",
            "list ./build/ please",
            "what is in (../assets)?",
        ] {
            assert!(names_a_directory(text), "{text}");
        }
        for text in [
            "show me ~/notes/todo.txt",
            "edit ~/.bashrc",
            "run /help",
            "and/or",
            "see https://example.com/docs",
            "a / b",
            "~/",
        ] {
            assert!(!names_a_directory(text), "{text}");
        }
    }
}
