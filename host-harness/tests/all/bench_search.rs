//! The search benchmark on a small catalog and query file, with figures computed by hand.

use std::path::PathBuf;

use host_harness::catalog::Catalog;
use host_harness::commands::bench::queries;
use host_harness::commands::bench::search::evaluate;
use host_harness::terminal::is_bidi_control;
use serde_json::{Value, json};

const CATALOG: &str = r#"{"servers": [
  {"name": "weather", "description": "Weather data.", "tools": [
    {"name": "get_forecast", "description": "Get the weather forecast for a city."}]},
  {"name": "files", "description": "Local files.", "tools": [
    {"name": "read_file", "description": "Read the contents of a file."},
    {"name": "write_file", "description": "Write content to a file."}]},
  {"name": "stocks", "description": "Markets.", "tools": [
    {"name": "get_quote", "description": "Get the latest price of a stock."}]}
]}"#;

const QUERIES: &str = r#"{"query": "weather forecast", "gold": ["weather/get_forecast"], "kind": "en"}
{"query": "write a file", "gold": ["files/write_file", "files/read_file"], "kind": "en"}
{"query": "read file", "gold": ["files/write_file"], "kind": "en"}
{"query": "明天的天气", "gold": ["weather/get_forecast"], "kind": "zh-en"}
{"query": "zzz", "gold": ["stocks/get_quote"]}
"#;

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lazy-tools-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn figures(report: &Value, scorer: &str, kind: &str) -> [f64; 5] {
    let m = &report["scorers"][scorer][kind];
    ["hit@1", "hit@5", "recall@5", "mrr@5", "n"].map(|k| {
        m[k].as_f64()
            .unwrap_or_else(|| panic!("{scorer} {kind} {k} in {report}"))
    })
}

fn close(actual: [f64; 5], expected: [f64; 5]) -> bool {
    actual
        .iter()
        .zip(expected)
        .all(|(a, e)| (a - e).abs() < 1e-9)
}

#[test]
fn the_benchmark_scores_every_scorer_with_the_right_arithmetic() {
    let catalog = Catalog::load(&write("catalog.json", CATALOG)).unwrap();
    let queries = queries::load(&write("queries.jsonl", QUERIES)).unwrap();
    let mut warnings = Vec::new();
    let report = evaluate(&catalog, &queries, 5, None, |w| warnings.push(w))
        .unwrap()
        .to_json();
    assert!(warnings.is_empty(), "{warnings:?}");
    let scorers: Vec<&String> = report["scorers"].as_object().unwrap().keys().collect();
    assert_eq!(scorers, ["lazy-tools", "dsh-lazy-tools", "kocoro", "bm25"]);

    // dsh-lazy-tools, by hand: "weather forecast" -> forecast tool first; "write a file" ->
    // write_file (29) then read_file (16); "read file" -> read_file (26) then write_file (13),
    // gold second; the Chinese query is one token no tool has; "zzz" matches nothing.
    let dsh = figures(&report, "dsh-lazy-tools", "all");
    assert!(
        close(dsh, [2.0 / 5.0, 3.0 / 5.0, 3.0 / 5.0, 2.5 / 5.0, 5.0]),
        "{dsh:?}"
    );
    let dsh_en = figures(&report, "dsh-lazy-tools", "en");
    assert!(
        close(dsh_en, [2.0 / 3.0, 1.0, 1.0, 2.5 / 3.0, 3.0]),
        "{dsh_en:?}"
    );
    assert!(close(
        figures(&report, "dsh-lazy-tools", "zh-en"),
        [0.0, 0.0, 0.0, 0.0, 1.0]
    ));

    // lazy-tools, inside the component: the same English results, and the Chinese query
    // (明天 tomorrow, 天气 weather) finds the tool described in English.
    let lazy = figures(&report, "lazy-tools", "all");
    assert!(
        close(lazy, [3.0 / 5.0, 4.0 / 5.0, 4.0 / 5.0, 3.5 / 5.0, 5.0]),
        "{lazy:?}"
    );
    assert!(close(
        figures(&report, "lazy-tools", "zh-en"),
        [1.0, 1.0, 1.0, 1.0, 1.0]
    ));

    assert_eq!(figures(&report, "kocoro", "all")[4], 5.0);
    assert_eq!(figures(&report, "bm25", "en")[4], 3.0);
}

#[test]
fn gold_ids_outside_the_catalog_are_reported() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    // Said at the query's line, blank lines counted, as a parse error would be.
    let queries =
        queries::parse("\n\n{\"query\": \"weather\", \"gold\": [\"nowhere/tool\"]}").unwrap();
    let mut warnings = Vec::new();
    let report = evaluate(&catalog, &queries, 5, None, |w| warnings.push(w)).unwrap();
    assert_eq!(
        warnings,
        ["line 3: gold `nowhere/tool` is not in the catalog"]
    );
    assert_eq!(report.scorers.len(), 4);
}

#[test]
fn deeper_rankings_keep_the_figures_and_are_written_per_query() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let queries = queries::parse(QUERIES).unwrap();
    let shallow = evaluate(&catalog, &queries, 5, None, |_| {}).unwrap();
    let deep = evaluate(&catalog, &queries, 20, None, |_| {}).unwrap();
    assert_eq!(
        shallow.scorers, deep.scorers,
        "metrics read the first five only"
    );

    let lines: Vec<Value> = deep
        .rankings_jsonl(&queries)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), queries.len());
    assert_eq!(lines[0]["query"], "weather forecast");
    assert_eq!(lines[0]["gold"][0], "weather/get_forecast");
    assert_eq!(
        lines[0]["rankings"]["lazy-tools"][0],
        "weather/get_forecast"
    );
    // "write a file": every scorer ranks both file tools, in the order it chose.
    for scorer in ["lazy-tools", "dsh-lazy-tools", "bm25"] {
        let ranked = lines[1]["rankings"][scorer].as_array().unwrap();
        for id in ["files/write_file", "files/read_file"] {
            assert!(ranked.iter().any(|r| r == id), "{scorer}: {ranked:?}");
        }
    }
}

#[test]
fn the_benchmark_measures_the_component_it_is_given() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let queries = queries::parse(QUERIES).unwrap();
    // The 0.1.0 test guest takes no config, so the benchmark's fails to install: the run
    // is the given component's, not the built-in one's.
    let old = crate::guests::component("restriction-v0-1-0");
    let error = evaluate(&catalog, &queries, 5, Some(&old), |_| {}).unwrap_err();
    assert!(
        format!("{error:#}").contains("this plugin takes no config"),
        "{error:#}"
    );
    let missing = std::env::temp_dir().join("no-such-lazy-tools.wasm");
    let error = evaluate(&catalog, &queries, 5, Some(&missing), |_| {}).unwrap_err();
    assert!(
        format!("{error:#}").contains(&missing.display().to_string()),
        "{error:#}"
    );
}

#[test]
fn the_rankings_never_replace_the_files_the_run_reads() {
    let catalog = write("guarded-catalog.json", CATALOG);
    let queries = write("guarded-queries.jsonl", QUERIES);
    for (victim, what) in [(&queries, "the query file"), (&catalog, "the catalog")] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_host-harness"))
            .args(["bench", "search", "--catalog"])
            .arg(&catalog)
            .arg("--queries")
            .arg(&queries)
            .arg("--rankings")
            .arg(victim)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(
            stderr.contains(&format!("is {what}; write the rankings to another file")),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(&queries).unwrap(), QUERIES);
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), CATALOG);
}

#[test]
fn a_query_too_long_for_tool_search_is_not_timed_and_said_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).unwrap();
    let queries = dir.path().join("queries.jsonl");
    let long = "weather ".repeat(100);
    let line =
        |query: &str| format!("{{\"query\": \"{query}\", \"gold\": [\"weather/get_forecast\"]}}\n");
    let run = |text: &str| {
        std::fs::write(&queries, text).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_host-harness"))
            .args([
                "bench",
                "search-speed",
                "--runs",
                "1",
                "--tools",
                "10",
                "--catalog",
            ])
            .arg(&catalog)
            .arg("--queries")
            .arg(&queries)
            .output()
            .unwrap()
    };
    let warning = "queries.jsonl, line 3: the query has 800 characters, more than tool_search \
                   takes (500); it is not timed";
    let output = run(&format!("{}\n{}", line("weather"), line(&long)));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(warning), "{stderr}");
    assert!(
        !stderr.contains(&long),
        "the query is not printed: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(", 1 queries, "), "{stdout}");
    let output = run(&format!("\n\n{}", line(&long)));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(warning) && stderr.contains("error: no query that tool_search takes"),
        "{stderr}"
    );
}

/// A query the shell refuses to pass (more than its 8 MiB of arguments) is said at its line,
/// and the other queries are scored: it used to end the whole run, with no line.
#[test]
fn a_query_the_shell_will_not_pass_is_said_at_its_line_and_the_run_goes_on() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let huge = "weather ".repeat(1 << 20);
    let text = format!(
        "{}{{\"query\": \"{huge}\", \"gold\": [\"weather/get_forecast\"]}}\n",
        QUERIES
    );
    let queries = queries::parse(&text).unwrap();
    let mut warnings = Vec::new();
    let report = evaluate(&catalog, &queries, 5, None, |w| warnings.push(w))
        .unwrap()
        .to_json();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "line 6: not searched: the shell did not run it: refused: the arguments of `tool_search` \
             are "
        ) && warnings[0].ends_with(" bytes of JSON; at most 8 MiB"),
        "{warnings:?}"
    );
    assert_eq!(figures(&report, "lazy-tools", "all")[4], 6.0);
}

/// `bench search --format json` prints the query file's kinds, and `--rankings` writes its
/// queries, with no control or bidirectional character raw (serde_json escapes only U+0000
/// to U+001F): each is a `\uXXXX` escape, and the JSON reads back as the file's text.
#[test]
fn the_json_report_and_the_rankings_hold_no_control_character_raw() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).unwrap();
    let kind = "en\u{202e}\u{1b}[31mRED\u{85}\u{9b}\u{7f}";
    let query = "weather\u{2066} forecast\u{9d}";
    let queries = dir.path().join("queries.jsonl");
    let line = serde_json::json!({"query": query, "gold": ["weather/get_forecast"], "kind": kind});
    std::fs::write(&queries, format!("{line}\n")).unwrap();
    let rankings = dir.path().join("rankings.jsonl");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(["bench", "search", "--format", "json", "--catalog"])
        .arg(&catalog)
        .arg("--queries")
        .arg(&queries)
        .arg("--rankings")
        .arg(&rankings)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let written = std::fs::read_to_string(&rankings).unwrap();
    for (what, text) in [("the report", &stdout), ("the rankings", &written)] {
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| (c.is_control() && c != '\n') || is_bidi_control(c))
            .collect();
        assert!(raw.is_empty(), "{what} holds {raw:?} raw: {text}");
    }
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        report["scorers"]["lazy-tools"].get(kind).is_some(),
        "{report}"
    );
    let ranked: Value = serde_json::from_str(written.trim_end()).unwrap();
    assert_eq!(
        (&ranked["query"], &ranked["kind"]),
        (&json!(query), &json!(kind))
    );
}
