//! Query files: JSONL lines `{"query": "...", "gold": ["server/tool", ...], "kind": "..."}`
//! (`kind` optional; other keys ignored).

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LabelledQuery {
    pub query: String,
    pub gold: Vec<String>,
    #[serde(default)]
    pub kind: Option<String>,
    /// Its line in the file (from 1), for the warnings about it.
    #[serde(skip)]
    pub line: usize,
}

pub fn load(path: &Path) -> Result<Vec<LabelledQuery>> {
    let text =
        crate::bounded::read_text(path, crate::bounded::MAX_QUERY_FILE_BYTES, "a query file")
            .with_context(|| format!("reading the query file {}", path.display()))?;
    parse(&text).with_context(|| format!("in the query file {}", path.display()))
}

pub fn parse(text: &str) -> Result<Vec<LabelledQuery>> {
    // A byte-order mark is no part of the first line's JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut queries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut query: LabelledQuery = serde_json::from_str(line).map_err(|e| {
            // serde_json places the error in the line it was given, its line 1.
            match crate::strict_json::json_error_at(&e, line) {
                (message, Some((_, column))) => {
                    anyhow::anyhow!("line {}, column {column}: {message}", i + 1)
                }
                (message, None) => anyhow::anyhow!("line {}: {message}", i + 1),
            }
        })?;
        query.line = i + 1;
        if query.gold.is_empty() {
            bail!("line {}: `gold` is empty", i + 1);
        }
        queries.push(query);
    }
    if queries.is_empty() {
        bail!("no queries");
    }
    Ok(queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_optional_kind_and_errors_name_the_line() {
        let queries = parse(
            "{\"query\": \"q\", \"gold\": [\"s/t\"], \"task\": \"x\"}\n\n{\"query\": \"问\", \"gold\": [\"s/u\"], \"kind\": \"zh-en\"}\n",
        )
        .unwrap();
        assert_eq!(queries.len(), 2);
        assert_eq!(queries[0].kind, None);
        assert_eq!(queries[1].kind.as_deref(), Some("zh-en"));
        assert_eq!(
            (queries[0].line, queries[1].line),
            (1, 3),
            "blank lines count"
        );
        let error = parse("{\"query\": \"q\", \"gold\": [\"s/t\"]}\n{\"query\": 1}").unwrap_err();
        assert_eq!(
            format!("{error}"),
            "line 2, column 11: invalid type: integer `1`, expected a string"
        );
        // The line of the file, not serde's line 1 of the line it was given.
        let error =
            parse("{\"query\": \"q\", \"gold\": [\"s/t\"]}\n{\"query\": \"q\", \"query\": \"r\"}")
                .unwrap_err();
        assert_eq!(
            format!("{error}"),
            "line 2, column 22: duplicate field `query`"
        );
        // The column counts characters: `读取文件` is 4 of them and 12 bytes.
        let error = parse("{\"query\": \"读取文件\", \"gold\": 1}").unwrap_err();
        assert_eq!(
            format!("{error}"),
            "line 1, column 27: invalid type: integer `1`, expected a sequence"
        );
        // A byte-order mark before the first line is not part of it.
        assert_eq!(
            parse("\u{feff}{\"query\": \"q\", \"gold\": [\"s/t\"]}")
                .unwrap()
                .len(),
            1
        );
        assert!(parse("{\"query\": \"q\", \"gold\": []}").is_err());
        assert!(parse("").is_err());
    }
}
