//! The catalog of deferred tools that goes into the system prompt.
//!
//! The text depends only on the set of deferred tools (sorted by name, then
//! grouped by server), never on registry order or on which tools the model
//! loaded, so a provider's prompt cache keeps hitting. When the text would
//! exceed its token cap it loses detail in fixed steps (descriptions, then
//! names), and a truncated list says how many it left out.

use std::collections::BTreeMap;

use crate::config::CatalogMode;
use crate::groups::GroupLine;
use crate::guards::{DEFERRED_TOOL_CALL, LOAD_TOOLS, TOOL_SEARCH, first_sentence};
use crate::registry::Registry;

/// One deferred tool as the catalog shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    pub name: String,
    pub description: String,
    /// The server (group) name and description, if any.
    pub group: Option<(String, String)>,
}

/// The catalog entries of an agent's deferred tools (`deferred`: every tool
/// the policy hides from it, loaded or not, so loading never changes the
/// text), with the definitions `agent` sees.
pub fn entries<'a>(
    deferred: impl IntoIterator<Item = &'a str>,
    registry: &Registry,
    agent: &str,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = deferred
        .into_iter()
        .filter_map(|name| registry.lookup(name, agent))
        .map(|tool| Entry {
            name: tool.name.clone(),
            description: tool.description.clone(),
            group: registry
                .group_of(tool)
                .map(|g| (g.name.clone(), g.description.clone())),
        })
        .collect();
    entries.sort();
    entries
}

const DISPATCH_HEADER: &str = "Tool groups you can load (their tools are not in your tool \
list). Call load_tools with a group_id (and tool_names to load only some) to get their schemas, \
then call a tool in the same turn with deferred_tool_call({\"tool_name\": ..., \"arguments\": \
{...}}). tool_search finds tools by what they do.";

/// The `dispatch` strategy's catalog: one line per group, in id order,
/// within `cap` tokens (tool names dropped first, then whole groups). It
/// depends only on the lines, never on what is loaded.
pub fn render_dispatch(
    lines: &[GroupLine],
    description_chars: usize,
    cap: u32,
    count: impl Fn(&str) -> u32,
) -> Option<String> {
    debug_assert!(
        DISPATCH_HEADER.contains(LOAD_TOOLS) && DISPATCH_HEADER.contains(DEFERRED_TOOL_CALL)
    );
    if lines.is_empty() || cap == 0 {
        return None;
    }
    let fits = |text: &String| count(text) <= cap;
    for with_tools in [true, false] {
        let text = dispatch_text(lines, lines.len(), with_tools, description_chars);
        if fits(&text) {
            return Some(text);
        }
    }
    largest_fitting(
        lines.len(),
        |k| dispatch_text(lines, k, false, description_chars),
        fits,
    )
}

fn dispatch_text(
    lines: &[GroupLine],
    k: usize,
    with_tools: bool,
    description_chars: usize,
) -> String {
    let mut text = String::from(DISPATCH_HEADER);
    for line in &lines[..k] {
        text.push_str("\n- ");
        text.push_str(&line.id);
        if let Some(display) = &line.display_name {
            text.push_str(&format!(" ({display})"));
        }
        let description = first_sentence(&line.description, description_chars);
        if !description.is_empty() {
            text.push_str(": ");
            text.push_str(&description);
        }
        if with_tools && !line.tools.is_empty() {
            text.push_str(" — tools: ");
            text.push_str(&line.tools.join(", "));
        } else if !line.tools.is_empty() {
            text.push_str(&format!(" ({} tools)", line.tools.len()));
        }
    }
    if k < lines.len() {
        text.push_str(&format!(
            "\n… and {} more groups; find their tools with {TOOL_SEARCH}.",
            lines.len() - k
        ));
    }
    text
}

/// Renders the catalog for `mode` within `cap` tokens; `count` gives the
/// tokens of a text. `None` when there is nothing to say or no room.
pub fn render(
    mode: CatalogMode,
    mut entries: Vec<Entry>,
    description_chars: usize,
    cap: u32,
    count: impl Fn(&str) -> u32,
) -> Option<String> {
    if mode == CatalogMode::None || entries.is_empty() || cap == 0 {
        return None;
    }
    entries.sort();
    entries.dedup_by(|a, b| a.name == b.name);
    let fits = |text: &String| count(text) <= cap;
    match mode {
        CatalogMode::None => None,
        CatalogMode::Names => {
            let full = names_with_descriptions(&entries, description_chars);
            if fits(&full) {
                return Some(full);
            }
            let ordered = round_robin(&entries);
            largest_fitting(ordered.len(), |k| names_only(&ordered, k), fits)
        }
        CatalogMode::Groups => {
            let groups = group(&entries);
            for detail in [
                GroupDetail::Tools,
                GroupDetail::Description,
                GroupDetail::Count,
            ] {
                let text = groups_text(&groups, groups.len(), detail, description_chars);
                if fits(&text) {
                    return Some(text);
                }
            }
            largest_fitting(
                groups.len(),
                |k| groups_text(&groups, k, GroupDetail::Count, description_chars),
                fits,
            )
        }
    }
}

const NAMES_HEADER: &str = "Deferred tools (not loaded yet). To use one, call tool_search with \
its exact name in tool_names, or with queries describing what you need; it becomes callable on \
your next request.";

const GROUPS_HEADER: &str = "Deferred tool groups (their tools are not loaded yet). Call \
tool_search with queries describing what you need, or with exact tool names, to load tools; they \
become callable on your next request.";

fn names_with_descriptions(entries: &[Entry], description_chars: usize) -> String {
    let mut text = String::from(NAMES_HEADER);
    for entry in entries {
        text.push_str("\n- ");
        text.push_str(&entry.name);
        let description = first_sentence(&entry.description, description_chars);
        if !description.is_empty() {
            text.push_str(": ");
            text.push_str(&description);
        }
    }
    text
}

/// The first `k` names (in round-robin order), comma-separated.
fn names_only(ordered: &[&Entry], k: usize) -> String {
    let mut text = String::from(NAMES_HEADER);
    text.push('\n');
    let names: Vec<&str> = ordered[..k].iter().map(|e| e.name.as_str()).collect();
    // The shown names stay sorted, whichever were kept.
    let mut sorted = names.clone();
    sorted.sort_unstable();
    text.push_str(&sorted.join(", "));
    if k < ordered.len() {
        text.push_str(&format!(
            "\n… and {} more; find them with {TOOL_SEARCH}.",
            ordered.len() - k
        ));
    }
    text
}

/// Entries ordered so that a prefix covers every group before a second tool
/// of any: the first tool of each group, then the second, and so on.
fn round_robin(entries: &[Entry]) -> Vec<&Entry> {
    let groups = group(entries);
    let mut ordered = Vec::with_capacity(entries.len());
    let mut round = 0;
    while ordered.len() < entries.len() {
        for (_, tools) in groups.values() {
            if let Some(entry) = tools.get(round) {
                ordered.push(*entry);
            }
        }
        round += 1;
    }
    ordered
}

#[derive(Clone, Copy)]
enum GroupDetail {
    /// Description and tool names.
    Tools,
    /// Description only.
    Description,
    /// The tool count only.
    Count,
}

type Groups<'a> = BTreeMap<&'a str, (&'a str, Vec<&'a Entry>)>;

/// Entries by group name (tools without a group under "other"), sorted.
fn group(entries: &[Entry]) -> Groups<'_> {
    let mut groups: Groups = BTreeMap::new();
    for entry in entries {
        let (name, description) = match &entry.group {
            Some((name, description)) => (name.as_str(), description.as_str()),
            None => ("other", ""),
        };
        groups
            .entry(name)
            .or_insert_with(|| (description, Vec::new()))
            .1
            .push(entry);
    }
    groups
}

fn groups_text(groups: &Groups, k: usize, detail: GroupDetail, description_chars: usize) -> String {
    let mut text = String::from(GROUPS_HEADER);
    for (name, (description, tools)) in groups.iter().take(k) {
        let count = match tools.len() {
            1 => "1 tool".to_string(),
            n => format!("{n} tools"),
        };
        text.push_str(&format!("\n- {name} ({count})"));
        let description = first_sentence(description, description_chars);
        if !matches!(detail, GroupDetail::Count) && !description.is_empty() {
            text.push_str(": ");
            text.push_str(&description);
        }
        if matches!(detail, GroupDetail::Tools) {
            let names: Vec<&str> = tools.iter().map(|e| e.name.as_str()).collect();
            text.push_str(" — ");
            text.push_str(&names.join(", "));
        }
    }
    if k < groups.len() {
        text.push_str(&format!(
            "\n… and {} more groups; find their tools with {TOOL_SEARCH}.",
            groups.len() - k
        ));
    }
    text
}

/// The text for the largest `k` in `1..=n` that fits, by binary search
/// (`render(k)` grows with `k`); `None` when even one does not fit.
fn largest_fitting(
    n: usize,
    render: impl Fn(usize) -> String,
    fits: impl Fn(&String) -> bool,
) -> Option<String> {
    let (mut lo, mut hi) = (0usize, n);
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let text = render(mid);
        if fits(&text) {
            lo = mid;
            best = Some(text);
        } else {
            hi = mid - 1;
        }
    }
    best.or_else(|| (lo > 0).then(|| render(lo)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str, group: Option<&str>) -> Entry {
        Entry {
            name: name.into(),
            description: description.into(),
            group: group.map(|g| (g.into(), format!("The {g} server. More text."))),
        }
    }

    fn entries() -> Vec<Entry> {
        vec![
            entry("gh__list_issues", "List issues. Paged.", Some("gh")),
            entry("slack__post", "Post a message.", Some("slack")),
            entry("gh__create_issue", "Create an issue.", Some("gh")),
            entry("todo_write", "Write the todo list.", None),
        ]
    }

    fn chars(text: &str) -> u32 {
        text.chars().count() as u32
    }

    #[test]
    fn names_are_sorted_with_first_sentences() {
        let text = render(CatalogMode::Names, entries(), 60, 10_000, chars).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "- gh__create_issue: Create an issue.",
                "- gh__list_issues: List issues.",
                "- slack__post: Post a message.",
                "- todo_write: Write the todo list."
            ]
        );
    }

    #[test]
    fn groups_list_their_tools() {
        let text = render(CatalogMode::Groups, entries(), 60, 10_000, chars).unwrap();
        assert!(
            text.contains("\n- gh (2 tools): The gh server. — gh__create_issue, gh__list_issues")
        );
        assert!(text.contains("\n- other (1 tool) — todo_write"));
    }

    #[test]
    fn order_of_input_never_changes_the_text() {
        let mut shuffled = entries();
        shuffled.reverse();
        for mode in [CatalogMode::Names, CatalogMode::Groups] {
            for cap in [10_000, 300, 230] {
                assert_eq!(
                    render(mode, entries(), 60, cap, chars),
                    render(mode, shuffled.clone(), 60, cap, chars)
                );
            }
        }
    }

    #[test]
    fn a_tight_cap_drops_detail_then_names() {
        let full = render(CatalogMode::Names, entries(), 60, 10_000, chars).unwrap();
        let cap = chars(&full) - 1;
        let text = render(CatalogMode::Names, entries(), 60, cap, chars).unwrap();
        assert!(chars(&text) <= cap);
        assert!(text.ends_with("gh__create_issue, gh__list_issues, slack__post, todo_write"));
        let cap = chars(NAMES_HEADER) + 80;
        let text = render(CatalogMode::Names, entries(), 60, cap, chars).unwrap();
        assert!(chars(&text) <= cap, "{text}");
        assert!(text.contains("more; find them with tool_search"), "{text}");
        assert_eq!(render(CatalogMode::Names, entries(), 60, 10, chars), None);
        assert_eq!(
            render(CatalogMode::None, entries(), 60, 10_000, chars),
            None
        );
        assert_eq!(
            render(CatalogMode::Names, Vec::new(), 60, 10_000, chars),
            None
        );
    }

    #[test]
    fn truncation_covers_every_group_first() {
        let ordered_entries = {
            let mut e = entries();
            e.sort();
            e
        };
        let names: Vec<&str> = round_robin(&ordered_entries)
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "gh__create_issue",
                "todo_write",
                "slack__post",
                "gh__list_issues"
            ]
        );
    }
}
