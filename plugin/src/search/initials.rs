//! Initials: a request writes a service as capitals (`HN`, `OSM`) where its server's text
//! writes the name whole (`Hacker News`, `OpenStreetMap`). A server's text gives the initials
//! of the names it writes, as terms of the server's name that no word can be; a query word
//! written in capitals looks its letters up among them.

/// Marks an initials term: the analyser makes terms of letters, digits and CJK characters only,
/// so no word of any text is such a term, and a query word's prefix and typo matches, which
/// keep its first letter, never reach one.
const MARK: char = '^';

/// Names of more words than this are not spelled out by their initials; a run of capitalised
/// words gives the initials of each of its parts of two to this many words.
const MAX_LETTERS: usize = 4;

/// Capitalised words held at once: a run reaching this is spelled, and goes on from its last
/// words (a part of it that they begin is spelled with the words that follow).
const MAX_RUN: usize = 16;

/// Initials read from one text at most: a heading in title case gives a few, a text of
/// nothing else gives no more than this.
const MAX_PER_TEXT: usize = 64;

/// The index term of `letters`, the initials of a name (any case).
pub fn term(letters: &str) -> String {
    let mut term = String::with_capacity(1 + letters.len());
    term.push(MARK);
    term.extend(letters.chars().map(|c| c.to_ascii_lowercase()));
    term
}

/// The initials of the names `text` writes, each once: of every run of two to
/// [`MAX_LETTERS`] capitalised words inside a longer run of them (`Official Hacker News` ->
/// oh, ohn, hn), and of each camel-case word (`OpenStreetMap` -> osm, `GitHub` -> gh).
/// A word in capitals (`MCP`) or after punctuation ends a run.
pub fn of_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<char> = Vec::new();
    for written in text.split_ascii_whitespace() {
        if out.len() >= MAX_PER_TEXT {
            break;
        }
        let word = written.trim_matches(|c: char| !c.is_alphanumeric());
        let joins = is_capitalised(word) && written.starts_with(word);
        if joins {
            run.push(word.as_bytes()[0] as char);
            // A longer run is a heading, not a name: its parts are spelled as it goes.
            if run.len() == MAX_RUN {
                let last = run[MAX_RUN - MAX_LETTERS + 1..].to_vec();
                spell_runs(&mut run, &mut out);
                run.extend(last);
            }
        } else {
            spell_runs(&mut run, &mut out);
            if let Some(camel) = camel_initials(word) {
                out.push(camel);
            }
        }
        if !written.ends_with(word) {
            spell_runs(&mut run, &mut out);
        }
    }
    spell_runs(&mut run, &mut out);
    out.truncate(MAX_PER_TEXT);
    out.sort_unstable();
    out.dedup();
    out
}

/// The words of a query written in capitals that may be initials: two to [`MAX_LETTERS`]
/// ASCII capitals, no other letter or digit next to them (`HN`, not `H2O` or `Hn`).
pub fn written(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|word| {
        (2..=MAX_LETTERS).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_uppercase())
    })
}

/// `Hacker`, not `hacker`, `MCP` or `A`: an ASCII capital followed by lowercase letters only.
fn is_capitalised(word: &str) -> bool {
    let mut bytes = word.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_uppercase())
        && word.len() > 1
        && bytes.all(|b| b.is_ascii_lowercase())
}

/// The capitals of a word of two to [`MAX_LETTERS`] capitalised parts written together
/// (`OpenStreetMap`, `GitHub`), lowercase; `None` for any other word (`MCP`, `iPhone`).
fn camel_initials(word: &str) -> Option<String> {
    let bytes = word.as_bytes();
    if !bytes.first()?.is_ascii_uppercase() || !bytes.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let capitals: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_uppercase())
        .collect();
    // Each capital begins a part of at least one lowercase letter.
    let parts_have_letters = capitals
        .iter()
        .all(|&i| bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase));
    ((2..=MAX_LETTERS).contains(&capitals.len()) && parts_have_letters).then(|| {
        capitals
            .iter()
            .map(|&i| bytes[i].to_ascii_lowercase() as char)
            .collect()
    })
}

/// Adds the initials of every part of two to [`MAX_LETTERS`] words of `run`, up to
/// [`MAX_PER_TEXT`] in `out`, and empties it.
fn spell_runs(run: &mut Vec<char>, out: &mut Vec<String>) {
    for letters in 2..=run.len().min(MAX_LETTERS) {
        for part in run.windows(letters) {
            if out.len() >= MAX_PER_TEXT {
                break;
            }
            out.push(part.iter().map(char::to_ascii_lowercase).collect());
        }
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_capitalised_words_gives_the_initials_of_each_of_its_parts() {
        assert_eq!(
            of_names("Official Hacker News MCP Server: stories."),
            ["hn", "oh", "ohn"]
        );
        assert_eq!(of_names("Access the Hacker News API"), ["hn"]);
    }

    #[test]
    fn a_camel_case_word_gives_its_capitals() {
        assert_eq!(of_names("An OpenStreetMap server"), ["osm"]);
        assert_eq!(of_names("GitHub, iPhone, MCP, HTTPServer"), ["gh"]);
    }

    #[test]
    fn punctuation_and_lowercase_words_end_a_run() {
        // `News.` ends its run: `Search` starts another, alone.
        assert_eq!(of_names("Hacker News. Search it"), ["hn"]);
        assert_eq!(of_names("Hacker (News)"), Vec::<String>::new());
        assert_eq!(of_names("plain text, no names"), Vec::<String>::new());
    }

    #[test]
    fn a_text_gives_a_bounded_number_of_initials() {
        let heading = "Alpha Beta Gamma Delta Epsilon ".repeat(1000);
        assert!(of_names(&heading).len() <= MAX_PER_TEXT);
        let camels = (0..1000).map(|i| format!("Ab{}Cd ", "x".repeat(i % 7 + 1)));
        assert!(of_names(&camels.collect::<String>()).len() <= MAX_PER_TEXT);
    }

    #[test]
    fn only_words_in_capitals_are_read_as_initials() {
        let words: Vec<&str> = written("posts on HN, OSM-tiles; Hn hn H2O A ABCDE").collect();
        assert_eq!(words, ["HN", "OSM"]);
    }

    #[test]
    fn an_initials_term_is_no_word() {
        assert_eq!(term("HN"), "^hn");
        let tokens = crate::search::analyze::analyzer().tokens("^hn ^HN");
        assert!(tokens.iter().all(|t| t.term == "hn"), "{tokens:?}");
    }
}
