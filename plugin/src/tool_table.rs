//! The registry in columns (WIT 0.3.0 `tool-table`): every tool's texts joined in one string
//! with where each ends, and each distinct origin once. A list of `tool-def` records crosses
//! the component boundary as four strings per tool, and the host lowers each string through
//! a call into the plugin's allocator: at 10,000 tools that was 13 to 14 ms of a first look
//! of about 75 ms. A table is a few strings and lists in all.
//!
//! The plugin reads a table from the shell, which it does not trust to be well formed: a
//! table that does not hold together is an error, never a trap.

use std::hash::Hash;

use crate::keyed_hash::KeyedMap;

use crate::registry::{Origin, ToolDef};

/// The texts each tool has in a table: name, description, parameters.
const TEXTS_PER_TOOL: usize = 3;

/// The bytes per tool that origins may hold beyond the texts' own, a copy for each tool that
/// names one (an origin is a server's name or an agent's id: tens of bytes). A table names
/// each origin once, but every tool read from it holds its own copy: 200 tools naming one
/// 1 MiB origin made 210 MB of a 1 MB table.
const ORIGIN_BYTES_PER_TOOL: usize = 256;

/// The registry's tools in columns; see the module's documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolTable {
    pub texts: String,
    pub ends: Vec<u32>,
    pub origins: Vec<Origin>,
    pub origin_of: Vec<u32>,
}

/// Why a table is not one, or cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("the table has {ends} text ends for {tools} tools; it needs three per tool")]
    EndCount { ends: usize, tools: usize },
    #[error(
        "tool {tool}: a text ends at byte {end}, before the text before it ends ({start}) or \
         past the texts' {len} bytes"
    )]
    OutOfOrder {
        tool: usize,
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("tool {tool}: a text ends at byte {end}, inside a character")]
    InsideCharacter { tool: usize, end: usize },
    #[error("the texts run {bytes} bytes past the last tool's end")]
    Trailing { bytes: usize },
    #[error("tool {tool}: its origin is number {origin} of {origins}")]
    NoSuchOrigin {
        tool: usize,
        origin: u32,
        origins: usize,
    },
    #[error("the texts pass 4 GiB: a table cannot say where they end")]
    TooLarge,
    #[error(
        "the tools' origins, a copy per tool, would hold {bytes} bytes: more than the texts \
         and 256 bytes per tool ({limit})"
    )]
    OriginsTooLarge { bytes: usize, limit: usize },
}

impl ToolTable {
    /// The table of `tools`, in order, whatever a host's tool type: `row` gives a tool's name,
    /// description and parameters and a key for its origin (a reference to it), and `origin`
    /// makes the plugin's origin once per distinct key. A host builds it from its own tools
    /// without copying them first; an error (the texts pass 4 GiB) means no table.
    pub fn of<'a, T, K: Copy + Hash + Eq>(
        tools: &'a [T],
        row: impl Fn(&'a T) -> ([&'a str; TEXTS_PER_TOOL], K),
        origin: impl Fn(K) -> Origin,
    ) -> Result<Self, TableError> {
        let bytes = tools
            .iter()
            .map(|t| row(t).0.iter().map(|text| text.len()).sum::<usize>())
            .sum();
        let mut table = Self {
            texts: String::with_capacity(bytes),
            ends: Vec::with_capacity(TEXTS_PER_TOOL * tools.len()),
            origins: Vec::new(),
            origin_of: Vec::with_capacity(tools.len()),
        };
        let mut places: KeyedMap<K, u32> = KeyedMap::default();
        for tool in tools {
            let (texts, key) = row(tool);
            for text in texts {
                table.texts.push_str(text);
                let end = u32::try_from(table.texts.len()).map_err(|_| TableError::TooLarge)?;
                table.ends.push(end);
            }
            let next = u32::try_from(table.origins.len()).unwrap_or(u32::MAX);
            let place = *places.entry(key).or_insert_with(|| {
                table.origins.push(origin(key));
                next
            });
            table.origin_of.push(place);
        }
        table.check_origin_bytes()?;
        Ok(table)
    }

    /// Refuses a table whose tools would hold too many bytes of origins (see
    /// [`ORIGIN_BYTES_PER_TOOL`]); an origin number out of range counts nothing here.
    fn check_origin_bytes(&self) -> Result<(), TableError> {
        let length = |origin: &Origin| match origin {
            Origin::Builtin => 0,
            Origin::Mcp(name) | Origin::Agent(name) => name.len(),
        };
        let lengths: Vec<usize> = self.origins.iter().map(length).collect();
        let bytes = self
            .origin_of
            .iter()
            .filter_map(|&origin| lengths.get(origin as usize))
            .fold(0usize, |sum, &length| sum.saturating_add(length));
        let limit = self
            .texts
            .len()
            .saturating_add(ORIGIN_BYTES_PER_TOOL.saturating_mul(self.origin_of.len()));
        if bytes > limit {
            return Err(TableError::OriginsTooLarge { bytes, limit });
        }
        Ok(())
    }

    /// The table of the plugin's own tool definitions.
    pub fn of_defs(tools: &[ToolDef]) -> Result<Self, TableError> {
        Self::of(
            tools,
            |t| ([&t.name, &t.description, &t.parameters], &t.origin),
            Origin::clone,
        )
    }

    /// The tools the table holds, in order; an error says the first thing wrong with it (texts
    /// past the last end are wrong too: a shell that wrote them meant something else).
    pub fn into_tools(self) -> Result<Vec<ToolDef>, TableError> {
        let tools = self.origin_of.len();
        if self.ends.len() != TEXTS_PER_TOOL * tools {
            return Err(TableError::EndCount {
                ends: self.ends.len(),
                tools,
            });
        }
        self.check_origin_bytes()?;
        let mut start = 0;
        let mut text = |tool: usize, end: u32| -> Result<String, TableError> {
            let end = end as usize;
            let Some(piece) = self.texts.get(start..end) else {
                let len = self.texts.len();
                return Err(if start <= end && end <= len {
                    TableError::InsideCharacter { tool, end }
                } else {
                    TableError::OutOfOrder {
                        tool,
                        start,
                        end,
                        len,
                    }
                });
            };
            start = end;
            Ok(piece.to_owned())
        };
        let mut out = Vec::with_capacity(tools);
        for (tool, (ends, &origin)) in self
            .ends
            .chunks_exact(TEXTS_PER_TOOL)
            .zip(&self.origin_of)
            .enumerate()
        {
            let origin = self
                .origins
                .get(origin as usize)
                .ok_or(TableError::NoSuchOrigin {
                    tool,
                    origin,
                    origins: self.origins.len(),
                })?;
            out.push(ToolDef {
                name: text(tool, ends[0])?,
                description: text(tool, ends[1])?,
                parameters: text(tool, ends[2])?,
                origin: origin.clone(),
            });
        }
        if start < self.texts.len() {
            return Err(TableError::Trailing {
                bytes: self.texts.len() - start,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn origin() -> impl Strategy<Value = Origin> {
        prop_oneof![
            Just(Origin::Builtin),
            "[a-c]{0,2}".prop_map(Origin::Mcp),
            "[a-c]{0,2}".prop_map(Origin::Agent),
        ]
    }

    fn tool() -> impl Strategy<Value = ToolDef> {
        // Empty texts, multi-byte characters and texts that spell another's field.
        let text = "[a é股\"{}]{0,6}";
        (text, text, text, origin()).prop_map(|(name, description, parameters, origin)| ToolDef {
            name,
            description,
            parameters,
            origin,
        })
    }

    proptest! {
        #[test]
        fn a_table_holds_the_tools_it_was_made_of(tools in prop::collection::vec(tool(), 0..12)) {
            let table = ToolTable::of_defs(&tools).unwrap();
            let distinct: std::collections::HashSet<&Origin> = tools.iter().map(|t| &t.origin).collect();
            prop_assert_eq!(table.origins.len(), distinct.len());
            prop_assert_eq!(table.into_tools(), Ok(tools));
        }

        #[test]
        fn any_table_reads_as_tools_or_as_an_error(
            texts in "[aé]{0,6}",
            ends in prop::collection::vec(0u32..12, 0..10),
            origins in prop::collection::vec(origin(), 0..3),
            origin_of in prop::collection::vec(0u32..4, 0..4),
        ) {
            let table = ToolTable { texts, ends, origins, origin_of };
            if let Ok(tools) = table.clone().into_tools() {
                prop_assert_eq!(tools.len(), table.origin_of.len());
                let joined: String = tools
                    .iter()
                    .flat_map(|t| [t.name.as_str(), t.description.as_str(), t.parameters.as_str()])
                    .collect();
                prop_assert_eq!(joined, table.texts);
            }
        }
    }

    fn table(texts: &str, ends: &[u32], origin_of: &[u32]) -> ToolTable {
        ToolTable {
            texts: texts.into(),
            ends: ends.to_vec(),
            origins: vec![Origin::Mcp("github".into())],
            origin_of: origin_of.to_vec(),
        }
    }

    #[test]
    fn a_broken_table_says_what_is_wrong_and_where() {
        assert_eq!(
            table("abc", &[1, 2], &[0]).into_tools(),
            Err(TableError::EndCount { ends: 2, tools: 1 })
        );
        assert_eq!(
            table("abcdef", &[1, 2, 3, 5, 4, 6], &[0, 0]).into_tools(),
            Err(TableError::OutOfOrder {
                tool: 1,
                start: 5,
                end: 4,
                len: 6
            })
        );
        assert_eq!(
            table("abc", &[1, 2, 9], &[0]).into_tools(),
            Err(TableError::OutOfOrder {
                tool: 0,
                start: 2,
                end: 9,
                len: 3
            })
        );
        // `é` is two bytes: byte 2 is inside it.
        assert_eq!(
            table("aé", &[1, 2, 3], &[0]).into_tools(),
            Err(TableError::InsideCharacter { tool: 0, end: 2 })
        );
        assert_eq!(
            table("abcde", &[1, 2, 3], &[0]).into_tools(),
            Err(TableError::Trailing { bytes: 2 })
        );
        assert_eq!(
            table("abc", &[1, 2, 3], &[1]).into_tools(),
            Err(TableError::NoSuchOrigin {
                tool: 0,
                origin: 1,
                origins: 1
            })
        );
        // Each tool of a table holds its own copy of its origin.
        let long = |tools: usize, origin: usize| ToolTable {
            texts: String::new(),
            ends: vec![0; 3 * tools],
            origins: vec![Origin::Builtin, Origin::Mcp("x".repeat(origin))],
            origin_of: vec![1; tools],
        };
        assert_eq!(
            long(200, 1 << 20).into_tools(),
            Err(TableError::OriginsTooLarge {
                bytes: 200 << 20,
                limit: 200 * 256
            })
        );
        let tools = long(200, 256).into_tools().unwrap();
        assert_eq!(tools.len(), 200);
        assert_eq!(
            ToolTable::of_defs(&tools).map(|t| t.origin_of.len()),
            Ok(200)
        );
        assert!(matches!(
            long(200, 257).into_tools(),
            Err(TableError::OriginsTooLarge { .. })
        ));
        let longer: Vec<ToolDef> = tools
            .into_iter()
            .map(|t| ToolDef {
                origin: Origin::Agent("x".repeat(257)),
                ..t
            })
            .collect();
        assert!(matches!(
            ToolTable::of_defs(&longer),
            Err(TableError::OriginsTooLarge { .. })
        ));
        let tools = table("create_issueOpens an issue.{}", &[12, 27, 29], &[0])
            .into_tools()
            .unwrap();
        assert_eq!(tools[0].name, "create_issue");
        assert_eq!(tools[0].description, "Opens an issue.");
        assert_eq!(tools[0].parameters, "{}");
    }
}
