//! `bench search`: lazy-tools (inside the component) and its peers on one catalog and one
//! query file, scored with the same metrics.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::component::{ComponentSearch, Found};
use super::metrics::{self, CUTOFF, Judged, Metrics};
use super::queries::{self, LabelledQuery};
use crate::catalog::Catalog;
use crate::commands::args::CatalogArg;
use crate::peers::{self, PeerTool};
use crate::terminal::{self, escape};

/// How to print the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// Each scorer's metrics, overall (`all`) and per query kind, in the order they ran, and
/// each scorer's ranking of each query.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub scorers: Vec<(String, BTreeMap<String, Metrics>)>,
    /// Per scorer (same order), per query, the catalog ids it ranked, best first.
    pub rankings: Vec<Vec<Vec<String>>>,
}

impl Report {
    /// `{"scorers": {"lazy-tools": {"all": {...}, "<kind>": {...}}, ...}}`
    pub fn to_json(&self) -> Value {
        let scorers: Map<String, Value> = self
            .scorers
            .iter()
            .map(|(name, by_kind)| (name.clone(), json!(by_kind)))
            .collect();
        json!({ "scorers": scorers })
    }

    /// One JSON line per query: the query, its gold tools and every scorer's ranking, for
    /// reading what a scorer missed or fusing rankings outside the harness.
    pub fn rankings_jsonl(&self, queries: &[LabelledQuery]) -> String {
        let mut out = String::new();
        for (i, q) in queries.iter().enumerate() {
            let ranked: Map<String, Value> = self
                .scorers
                .iter()
                .zip(&self.rankings)
                .map(|((name, _), ranked)| (name.clone(), json!(ranked[i])))
                .collect();
            let line =
                json!({"query": q.query, "gold": q.gold, "kind": q.kind, "rankings": ranked});
            // The query file's text, printed as it reads back (a rankings file is read on a
            // terminal too).
            out.push_str(&terminal::json(&line).expect("a JSON value serializes"));
            out.push('\n');
        }
        out
    }

    pub fn to_table(&self) -> String {
        let mut lines = vec![format!(
            "{:<16} {:<8} {:>4} {:>6} {:>6} {:>9} {:>6}",
            "scorer", "kind", "n", "hit@1", "hit@5", "recall@5", "mrr@5"
        )];
        for (name, by_kind) in &self.scorers {
            for (kind, m) in by_kind {
                // A kind is the query file's own text.
                let kind = escape(kind);
                lines.push(format!(
                    "{name:<16} {kind:<8} {:>4} {:>6.3} {:>6.3} {:>9.3} {:>6.3}",
                    m.n, m.hit_at_1, m.hit_at_5, m.recall_at_5, m.mrr_at_5
                ));
            }
        }
        lines.join("\n")
    }
}

/// Runs every scorer on every query, each ranking `depth` tools (the metrics read the first
/// [`CUTOFF`]); lazy-tools is the component at `component`, or the one built with this
/// harness. Warnings (unknown gold ids, refused queries) go to `warn`.
pub fn evaluate(
    catalog: &Catalog,
    queries: &[LabelledQuery],
    depth: usize,
    component: Option<&Path>,
    mut warn: impl FnMut(String),
) -> Result<Report> {
    let known: HashSet<String> = catalog.tools().map(|(id, _)| id).collect();
    for q in queries {
        for gold in q.gold.iter().filter(|g| !known.contains(*g)) {
            warn(format!(
                "line {}: gold `{gold}` is not in the catalog",
                q.line
            ));
        }
    }
    let mut rankings: Vec<(String, Vec<Vec<String>>)> = Vec::new();

    let mut lazy_tools = ComponentSearch::with_component(catalog, component)?;
    let mut ranked = Vec::with_capacity(queries.len());
    for q in queries {
        ranked.push(match lazy_tools.search(&q.query, depth)? {
            Found::Ranking(ids) => ids,
            Found::Refused(text) => {
                warn(format!("line {}: not searched: {text}", q.line));
                Vec::new()
            }
        });
    }
    rankings.push(("lazy-tools".into(), ranked));

    let tools = PeerTool::from_catalog(catalog);
    for peer in peers::all(&tools) {
        let ranked = queries
            .iter()
            .map(|q| {
                peer.rank(&q.query, depth)
                    .into_iter()
                    .map(|i| tools[i].id.clone())
                    .collect()
            })
            .collect();
        rankings.push((peer.name().to_string(), ranked));
    }

    let scorers = rankings
        .iter()
        .map(|(name, ranked)| {
            let judged: Vec<Judged<'_>> = queries
                .iter()
                .zip(ranked)
                .map(|(q, ranking)| Judged {
                    kind: q.kind.as_deref(),
                    gold: &q.gold,
                    ranking,
                })
                .collect();
            (name.clone(), metrics::summarise(&judged))
        })
        .collect();
    let rankings = rankings.into_iter().map(|(_, ranked)| ranked).collect();
    Ok(Report { scorers, rankings })
}

/// `bench search`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    catalog: CatalogArg,
    /// JSONL, one query a line: `{"query": "...", "gold": ["server/tool", ...],
    /// "kind": "..."}` (`kind` optional; figures are also given per kind).
    #[arg(long, value_name = "FILE")]
    queries: PathBuf,
    /// `table` for people, `json` for scripts.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also write every scorer's ranking of every query to FILE, one JSON line a query.
    #[arg(long, value_name = "FILE")]
    rankings: Option<PathBuf>,
    /// How many tools each scorer ranks per query (the metrics read the first five).
    #[arg(long, default_value_t = CUTOFF as u32, value_parser = clap::value_parser!(u32).range(CUTOFF as i64..=MAX_DEPTH))]
    depth: u32,
    /// The lazy-tools component to measure [default: the one built with this harness];
    /// another build of it (an older commit's) gives before-and-after figures from one
    /// binary, the peers in the same runs.
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
}

/// Whether `a` and `b` name the same existing file (through links and `..` too).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// As deep as `tool_search`'s `top_k` goes.
const MAX_DEPTH: i64 = 50;

impl Args {
    pub fn run(self) -> Result<()> {
        let catalog_path = self.catalog.path();
        // Checked before the run: the rankings must not replace what the run reads.
        if let Some(path) = &self.rankings {
            for (input, what) in [
                (&self.queries, "the query file"),
                (&catalog_path, "the catalog"),
            ] {
                if same_file(path, input) {
                    bail!(
                        "--rankings {} is {what}; write the rankings to another file",
                        escape(&path.display().to_string())
                    );
                }
            }
        }
        let catalog = Catalog::load(&catalog_path)?;
        let queries = queries::load(&self.queries)?;
        let report = evaluate(
            &catalog,
            &queries,
            self.depth as usize,
            self.component.as_deref(),
            |w| eprintln!("warning: {}", escape(&w)),
        )?;
        if let Some(path) = &self.rankings {
            crate::atomic_write::write_atomic(path, report.rankings_jsonl(&queries).as_bytes())
                .with_context(|| format!("writing the rankings to {}", path.display()))?;
        }
        match self.format {
            // The kinds are the query file's text: no control reaches the terminal raw.
            Format::Json => println!("{}", terminal::json(&report.to_json())?),
            Format::Table => println!("{}", report.to_table()),
        }
        Ok(())
    }
}
