//! Exact token counts with OpenAI's BPE vocabularies (shipped inside the
//! `bpe-openai` crate, so counting needs no network).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::shell_core::TokenCounter;
use crate::tool::ToolSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// GPT-4o and later (`o200k_base`).
    #[default]
    O200k,
    /// GPT-4 and GPT-3.5 (`cl100k_base`).
    Cl100k,
}

impl Tokenizer {
    pub fn count(self, text: &str) -> u32 {
        let bpe = match self {
            Tokenizer::O200k => bpe_openai::o200k_base(),
            Tokenizer::Cl100k => bpe_openai::cl100k_base(),
        };
        u32::try_from(bpe.count(text)).unwrap_or(u32::MAX)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
        }
    }

    /// The tokens a tool list costs: each tool as compact JSON
    /// `{name, description, input_schema}`, summed.
    pub fn count_tools(self, tools: &[ToolSchema]) -> u64 {
        tools
            .iter()
            .map(|t| u64::from(self.count(&serde_json::to_string(t).unwrap_or_default())))
            .sum()
    }
}

impl TokenCounter for Tokenizer {
    fn count(&self, text: &str) -> u32 {
        Tokenizer::count(*self, text)
    }

    /// The vocabulary is loaded at its first use.
    fn warm_up(&self) {
        Tokenizer::count(*self, "");
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenizer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "o200k" | "o200k_base" => Ok(Tokenizer::O200k),
            "cl100k" | "cl100k_base" => Ok(Tokenizer::Cl100k),
            other => Err(format!("unknown tokenizer `{other}`: use o200k or cl100k")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        // Both vocabularies encode "hello world" as two tokens.
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100k.count("hello world"), 2);
        assert_eq!(Tokenizer::O200k.count(""), 0);
        assert!(Tokenizer::O200k.count("查询股票价格") >= 3);
    }
}
