//! `host-harness search [--catalog <file>] [--top <n>] [--why <tool>]... <query>`: how
//! lazy-tools' search reads a query over a catalog, what it ranks, and why each tool ranks
//! where it does: the share of its score each word of the query earns, and which of the
//! tool's or its server's terms earn it. For whoever writes a catalog or its `x-lazy-tools`
//! enrichment and wants to know why a tool is missed.
//!
//! The plugin's index runs natively here (the crate the component is built from, over the
//! registry and enrichment the shell would hand it): the same ranking `tool_search` makes,
//! which `bench search` measures inside the component.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};
use lazy_tools::guards::{MAX_QUERY_CHARS, MAX_TOP_K};
use lazy_tools::search::{Explanation, SearchIndex, Slot};
use lazy_tools::suggest::did_you_mean;

use super::args::CatalogArg;
use crate::catalog::Catalog;
use crate::host_view::catalog_registry;
use crate::terminal::escape;

/// Forms of one word printed before the rest are counted (a word may reach dozens of name
/// prefixes and synonyms).
const SHOWN_FORMS: usize = 8;

/// Tools explained with `--why` in one run: each is a ranking of the whole catalog.
const MAX_WHY: usize = 50;

/// `host-harness search`.
#[derive(clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    catalog: CatalogArg,
    /// How many tools to rank, as `tool_search`'s `top_k` (at most 50).
    #[arg(long, default_value_t = 5, value_name = "N")]
    top: u32,
    /// A tool to explain wherever it ranks (as the model sees its name,
    /// `github__create_issue`): the one you expected the query to find.
    #[arg(long = "why", value_name = "TOOL")]
    why: Vec<String>,
    /// The query, as the model would send it to `tool_search`.
    query: String,
}

impl SearchArgs {
    pub fn run(self) -> Result<()> {
        run(
            &self.catalog.path(),
            &self.query,
            self.top,
            &self.why,
            &mut std::io::stdout().lock(),
        )
    }
}

/// Prints how `query` is read over `catalog`, its top `top` tools with each one's shares, and
/// the shares of each tool of `why`.
pub fn run(
    catalog: &Path,
    query: &str,
    top: u32,
    why: &[String],
    out: &mut dyn Write,
) -> Result<()> {
    let chars = query.chars().count();
    if query.trim().is_empty() {
        bail!("the query is empty: say what the tool should do");
    }
    if chars > MAX_QUERY_CHARS {
        bail!("the query is {chars} characters long; tool_search reads at most {MAX_QUERY_CHARS}");
    }
    if !(1..=MAX_TOP_K).contains(&top) {
        bail!("--top {top}: tool_search ranks 1 to {MAX_TOP_K} tools");
    }
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&String> = why.iter().filter(|tool| seen.insert(*tool)).collect();
    if distinct.len() > MAX_WHY {
        bail!(
            "--why names {} tools; at most {MAX_WHY} are explained at once",
            distinct.len()
        );
    }
    let path = escape(&catalog.display().to_string()).into_owned();
    let catalog = Catalog::load(catalog)?;
    let index = SearchIndex::build(&catalog_registry(&catalog));
    // The top tools, then the `--why` ones: one ranking explains them all.
    let ranked: Vec<&str> = index
        .search(query, top as usize, |_| true)
        .into_iter()
        .chain(distinct.iter().map(|tool| tool.as_str()))
        .collect();
    let mut explained = index.explain_each(query, &ranked).into_iter();
    let top_explained: Vec<_> = explained
        .by_ref()
        .take(ranked.len() - distinct.len())
        .collect();
    let mut why_explained = Vec::with_capacity(distinct.len());
    for (tool, explanation) in distinct.iter().zip(explained) {
        let Some(explanation) = explanation else {
            let names: Vec<String> = catalog.tools().map(|(_, tool)| tool.name).collect();
            bail!(
                "--why: no tool named `{}` is in {path}{}",
                escape(tool),
                did_you_mean(tool, names.iter().map(String::as_str))
            );
        };
        why_explained.push((tool, explanation));
    }

    let slots = index.read_query(query);
    writeln!(
        out,
        "How the index reads \"{}\" (a tool scores the best form of each word it holds):",
        escape(query)
    )?;
    if slots.is_empty() {
        writeln!(
            out,
            "  no word of it is a term any tool of this catalog holds"
        )?;
    }
    for slot in &slots {
        writeln!(out, "  {:<14} {}", escape(slot.label()), forms(slot))?;
    }

    let top_tools = &ranked[..top_explained.len()];
    writeln!(out, "\nRanked (top {top}):")?;
    if top_tools.is_empty() {
        writeln!(out, "  no tool matches")?;
    }
    for (at, (name, explanation)) in top_tools.iter().zip(top_explained).enumerate() {
        let explanation = explanation.expect("a ranked tool is indexed");
        writeln!(
            out,
            "  {:>2}  {:<44} {}",
            at + 1,
            escape(name),
            shares(&explanation, &slots)
        )?;
    }
    for (tool, explanation) in why_explained {
        let place = match explanation.rank {
            Some(rank) => format!("ranks {rank}"),
            None => "is not ranked: no word of the query is in its text or its server's".into(),
        };
        writeln!(out, "\n{} {place}", escape(tool))?;
        if explanation.rank.is_some() {
            writeln!(out, "  {}", shares(&explanation, &slots))?;
        }
    }
    Ok(())
}

/// A word's forms: `term weight`, a form of several terms joined by `+`.
fn forms(slot: &Slot) -> String {
    let mut shown: Vec<String> = slot
        .forms
        .iter()
        .take(SHOWN_FORMS)
        .map(|form| {
            form.iter()
                .map(|t| format!("{} {:.2}", escape(&t.term), t.weight))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect();
    if slot.forms.len() > SHOWN_FORMS {
        shown.push(format!("and {} more", slot.forms.len() - SHOWN_FORMS));
    }
    shown.join(" | ")
}

/// A tool's score and what earns it: `score = word share (terms), ...`, the name boost last.
fn shares(explanation: &Explanation, slots: &[Slot]) -> String {
    let mut parts: Vec<String> = explanation
        .shares
        .iter()
        .map(|share| {
            let mut held: Vec<String> = share.in_tool.iter().map(|t| escape(t).into()).collect();
            held.extend(
                share
                    .in_server
                    .iter()
                    .map(|t| format!("server: {}", escape(t))),
            );
            format!(
                "{} {:.2} ({})",
                escape(slots[share.slot].label()),
                share.score,
                held.join(", ")
            )
        })
        .collect();
    if explanation.name_boost > 1.0 {
        parts.push(format!("x{:.2} its name", explanation.name_boost));
    }
    let exact = if explanation.exact {
        " (its name: first whatever its score)"
    } else {
        ""
    };
    format!("{:.2}{exact} = {}", explanation.score, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("catalog.json");
        std::fs::write(
            &path,
            serde_json::json!({"servers": [
                {"name": "fs", "description": "Local files", "tools": [
                    {"name": "write_file", "description": "Create or overwrite a file."},
                    {"name": "read_file", "description": "Read a file."}
                ]},
                {"name": "jira", "description": "Issue tracker", "tools": [
                    {"name": "create", "description": "Create an item.",
                     "x-lazy-tools": {"keywords": ["bug report"]}}
                ]}
            ]})
            .to_string(),
        )
        .unwrap();
        path
    }

    fn output(catalog: &Path, query: &str, why: &[&str]) -> Result<String> {
        let why: Vec<String> = why.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        run(catalog, query, 5, &why, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn it_says_which_words_earn_a_tool_its_place_enrichment_included() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = catalog(dir.path());
        let text = output(&catalog, "bug report", &["fs__read_file"]).unwrap();
        // Only the enrichment's keywords hold these words; the share names them.
        let first = text
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .unwrap();
        assert!(first.contains("jira__create"), "{text}");
        assert!(
            first.contains("bug 0.") && first.contains("report 0."),
            "{text}"
        );
        assert!(text.contains("\nfs__read_file is not ranked"), "{text}");
        // Where other tools' own names outweigh it, the expected tool's place and shares are
        // printed all the same.
        let text = output(&catalog, "read the file of the bug", &["jira__create"]).unwrap();
        assert!(text.contains("\njira__create ranks 3\n"), "{text}");
        let why = text.split("ranks 3\n").nth(1).unwrap();
        assert!(why.contains("bug 0."), "{text}");
        assert!(!why.contains("file"), "{text}");
    }

    #[test]
    fn a_tool_it_cannot_find_or_a_query_past_the_limit_is_an_error_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = catalog(dir.path());
        let err = output(&catalog, "write a file", &["fs__write_fil"]).unwrap_err();
        assert!(
            err.to_string().contains("no tool named `fs__write_fil`"),
            "{err}"
        );
        assert!(err.to_string().contains("fs__write_file"), "{err}");
        let long = "file ".repeat(200);
        let err = output(&catalog, &long, &[]).unwrap_err();
        assert!(err.to_string().contains("1000 characters long"), "{err}");
        let err = output(&catalog, "  ", &[]).unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }

    #[test]
    fn a_tool_no_word_reaches_is_said_to_be_unranked() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = catalog(dir.path());
        let text = output(&catalog, "write a file", &["jira__create"]).unwrap();
        assert!(text.contains("jira__create is not ranked"), "{text}");
    }
}
