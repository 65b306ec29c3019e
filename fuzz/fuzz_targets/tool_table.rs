//! A registry table as a shell sends it (WIT 0.3.0 `tool-table`): any table
//! reads as tools or as an error, never a panic; the tools read re-encode to a
//! table that reads back as the same tools.

#![no_main]

use lazy_tools::registry::Origin;
use lazy_tools::tool_table::ToolTable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first bytes are the text ends and origin numbers, the rest the texts.
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let numbers = usize::from(count % 16).min(rest.len() / 2);
    let (numbers, texts) = rest.split_at(2 * numbers);
    let numbers: Vec<u32> = numbers
        .chunks_exact(2)
        .map(|pair| u32::from(u16::from_le_bytes([pair[0], pair[1]])))
        .collect();
    let split = numbers.len() * 3 / 4;
    let table = ToolTable {
        texts: String::from_utf8_lossy(texts).into_owned(),
        ends: numbers[..split].to_vec(),
        origins: vec![Origin::Builtin, Origin::Mcp("github".into())],
        origin_of: numbers[split..].iter().map(|n| n % 3).collect(),
    };
    if let Ok(tools) = table.into_tools() {
        let again = ToolTable::of_defs(&tools).expect("tools read from a table fit one");
        assert_eq!(again.into_tools().as_ref(), Ok(&tools));
    }
});
