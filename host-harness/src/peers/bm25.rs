//! Plain BM25 (k1 = 1.2, b = 0.75) over the fields Anthropic's tool search documents: the
//! tool's name, description, parameter names and parameter descriptions, as one text.
//! Lowercase words split on anything not alphanumeric; no stop words, no stemming.

use std::collections::HashMap;

use super::{Peer, PeerTool};

const K1: f64 = 1.2;
const B: f64 = 0.75;

pub struct Bm25 {
    /// Per tool, term frequencies and length.
    documents: Vec<(HashMap<String, u32>, f64)>,
    document_frequency: HashMap<String, u32>,
    average_length: f64,
}

impl Bm25 {
    pub fn new(tools: &[PeerTool]) -> Self {
        let mut document_frequency: HashMap<String, u32> = HashMap::new();
        let documents: Vec<(HashMap<String, u32>, f64)> = tools
            .iter()
            .map(|t| {
                let mut text = vec![t.name.as_str(), t.description.as_str()];
                for (name, description) in &t.parameters {
                    text.push(name);
                    text.push(description);
                }
                let mut tf: HashMap<String, u32> = HashMap::new();
                let mut length = 0.0;
                for word in text.iter().flat_map(|t| words(t)) {
                    *tf.entry(word).or_default() += 1;
                    length += 1.0;
                }
                for term in tf.keys() {
                    *document_frequency.entry(term.clone()).or_default() += 1;
                }
                (tf, length)
            })
            .collect();
        let average_length =
            documents.iter().map(|(_, l)| l).sum::<f64>() / documents.len().max(1) as f64;
        Self {
            documents,
            document_frequency,
            average_length,
        }
    }

    fn score(&self, query: &[String], document: usize) -> f64 {
        let n = self.documents.len() as f64;
        let (tf, length) = &self.documents[document];
        query
            .iter()
            .filter_map(|term| {
                let f = *tf.get(term)? as f64;
                let df = self.document_frequency[term] as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let norm = K1 * (1.0 - B + B * length / self.average_length);
                Some(idf * f * (K1 + 1.0) / (f + norm))
            })
            .sum()
    }
}

impl Peer for Bm25 {
    fn name(&self) -> &'static str {
        "bm25"
    }

    fn rank(&self, query: &str, top_k: usize) -> Vec<usize> {
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let mut scored: Vec<(f64, usize)> = (0..self.documents.len())
            .map(|i| (self.score(&terms, i), i))
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(top_k).map(|(_, i)| i).collect()
    }
}

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_and_denser_terms_rank_higher() {
        let tool = |name: &str, description: &str| PeerTool {
            id: name.into(),
            name: name.into(),
            description: description.into(),
            parameters: vec![("path".into(), "Where the file is".into())],
        };
        let tools = [
            tool("read_file", "Read a file"),
            tool("write_file", "Write a file"),
            tool("weather", "Weather forecast for a city"),
        ];
        let bm25 = Bm25::new(&tools);
        assert_eq!(bm25.rank("weather", 5), [2]);
        // "file" is in all three (parameter description); "read" only in the first.
        assert_eq!(bm25.rank("read file", 5)[0], 0);
        assert_eq!(bm25.rank("read file", 5).len(), 3);
        assert!(bm25.rank("", 5).is_empty());
        // By hand: one document of three holds "weather" twice; it has 11 words (name 1,
        // description 5, parameter 1 + 4), the others 10 each.
        let n = 3.0;
        let idf = ((n - 1.0 + 0.5) / (1.0 + 0.5) + 1.0f64).ln();
        let expected = idf * 2.0 * 2.2 / (2.0 + 1.2 * (0.25 + 0.75 * 11.0 / (31.0 / 3.0)));
        assert!((bm25.score(&["weather".into()], 2) - expected).abs() < 1e-9);
    }
}
