//! Retrieval metrics over the top five results: hit@1, hit@5 (any gold tool in the top five),
//! recall@5 (the share of gold tools in the top five), MRR@5 (1 / rank of the first gold tool,
//! 0 past five), averaged over queries, overall and per query kind.

use std::collections::BTreeMap;

use serde::Serialize;

/// How many results the metrics read.
pub const CUTOFF: usize = 5;

/// The metrics of one scorer on a set of queries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    #[serde(rename = "hit@1")]
    pub hit_at_1: f64,
    #[serde(rename = "hit@5")]
    pub hit_at_5: f64,
    #[serde(rename = "recall@5")]
    pub recall_at_5: f64,
    #[serde(rename = "mrr@5")]
    pub mrr_at_5: f64,
    pub n: usize,
}

/// One query's gold tools and a scorer's ranking, by catalog id.
#[derive(Debug, Clone)]
pub struct Judged<'a> {
    pub kind: Option<&'a str>,
    pub gold: &'a [String],
    pub ranking: &'a [String],
}

/// The four per-query numbers, before averaging.
fn per_query(gold: &[String], ranking: &[String]) -> [f64; 4] {
    let top = &ranking[..ranking.len().min(CUTOFF)];
    let first = top.iter().position(|id| gold.contains(id));
    let mut distinct_gold: Vec<&String> = gold.iter().collect();
    distinct_gold.sort();
    distinct_gold.dedup();
    let found = distinct_gold.iter().filter(|g| top.contains(g)).count();
    [
        f64::from(u8::from(first == Some(0))),
        f64::from(u8::from(first.is_some())),
        if distinct_gold.is_empty() {
            0.0
        } else {
            found as f64 / distinct_gold.len() as f64
        },
        first.map_or(0.0, |rank| 1.0 / (rank + 1) as f64),
    ]
}

/// Metrics over all queries (key `all`) and over each kind present.
pub fn summarise(judged: &[Judged<'_>]) -> BTreeMap<String, Metrics> {
    let mut sums: BTreeMap<String, ([f64; 4], usize)> = BTreeMap::new();
    for j in judged {
        let numbers = per_query(j.gold, j.ranking);
        let keys = std::iter::once("all").chain(j.kind);
        for key in keys {
            let (sum, n) = sums.entry(key.to_string()).or_default();
            for (s, x) in sum.iter_mut().zip(numbers) {
                *s += x;
            }
            *n += 1;
        }
    }
    sums.into_iter()
        .map(|(key, (sum, n))| {
            let mean = |i: usize| sum[i] / n as f64;
            (
                key,
                Metrics {
                    hit_at_1: mean(0),
                    hit_at_5: mean(1),
                    recall_at_5: mean(2),
                    mrr_at_5: mean(3),
                    n,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_of_a_case_computed_by_hand() {
        let gold_a = ids(&["s/a", "s/b"]);
        let gold_b = ids(&["s/z"]);
        let gold_c = ids(&["s/c"]);
        // a: gold at ranks 2 and 6 (only rank 2 counts): hit@1 0, hit@5 1, recall 1/2, rr 1/2.
        let ranking_a = ids(&["s/x", "s/a", "s/y", "s/w", "s/v", "s/b"]);
        // b: no gold: all 0.
        let ranking_b = ids(&["s/x"]);
        // c: gold first: all 1.
        let ranking_c = ids(&["s/c", "s/x"]);
        let judged = [
            Judged {
                kind: Some("en"),
                gold: &gold_a,
                ranking: &ranking_a,
            },
            Judged {
                kind: Some("en"),
                gold: &gold_b,
                ranking: &ranking_b,
            },
            Judged {
                kind: None,
                gold: &gold_c,
                ranking: &ranking_c,
            },
        ];
        let metrics = summarise(&judged);
        let all = metrics["all"];
        assert_eq!(all.n, 3);
        assert!((all.hit_at_1 - 1.0 / 3.0).abs() < 1e-12);
        assert!((all.hit_at_5 - 2.0 / 3.0).abs() < 1e-12);
        assert!((all.recall_at_5 - 1.5 / 3.0).abs() < 1e-12);
        assert!((all.mrr_at_5 - 1.5 / 3.0).abs() < 1e-12);
        let en = metrics["en"];
        assert_eq!(en.n, 2);
        assert_eq!(
            (en.hit_at_1, en.hit_at_5, en.recall_at_5, en.mrr_at_5),
            (0.0, 0.5, 0.25, 0.25)
        );
        assert_eq!(metrics.len(), 2);
    }

    #[test]
    fn repeated_gold_ids_count_once() {
        let gold = ids(&["s/a", "s/a"]);
        assert_eq!(per_query(&gold, &ids(&["s/a"])), [1.0, 1.0, 1.0, 1.0]);
        assert_eq!(per_query(&[], &ids(&["s/a"])), [0.0, 0.0, 0.0, 0.0]);
    }
}
