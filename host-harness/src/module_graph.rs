//! Checks that this crate's modules use each other in one direction only: at
//! every level of the module tree, the sibling modules' uses of each other
//! (through `crate::`, `super::` or `self::` paths, anywhere in the code)
//! form no cycle. A parent and its own children are not compared: a folder's
//! `mod.rs` re-exports its children, and they use its items.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

type ModPath = Vec<String>;

/// The module a source file defines (`src/lib.rs` is the root).
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: ModPath = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src folder") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every path in `tokens` that starts with `crate`, `super` or `self`,
/// resolved against `module` (a `{...}` group yields one path per item).
fn paths(tokens: TokenStream, module: &[String], out: &mut Vec<ModPath>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            // An inline `mod name { .. }`: its `super` is the file's module.
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace && i >= 2 => {
                match (&trees[i - 2], &trees[i - 1]) {
                    (TokenTree::Ident(keyword), TokenTree::Ident(name)) if keyword == "mod" => {
                        let mut inner = module.to_vec();
                        inner.push(name.to_string());
                        paths(group.stream(), &inner, out);
                    }
                    _ => paths(group.stream(), module, out),
                }
            }
            TokenTree::Group(group) => paths(group.stream(), module, out),
            TokenTree::Ident(ident) => {
                let mut base: ModPath = match ident.to_string().as_str() {
                    "crate" => Vec::new(),
                    "self" => module.to_vec(),
                    "super" => module[..module.len().saturating_sub(1)].to_vec(),
                    _ => continue,
                };
                // Only the head of a path: `super::super::x` is read once.
                if i >= 2 && is_path_sep(&trees[i - 2..i]) {
                    continue;
                }
                let mut at = i + 1;
                while at < trees.len() && is_path_sep(&trees[at..]) {
                    match trees.get(at + 2) {
                        Some(TokenTree::Ident(next)) if next == "super" => {
                            base.pop();
                        }
                        Some(TokenTree::Ident(next)) => base.push(next.to_string()),
                        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                            for item in use_group_heads(g.stream()) {
                                let mut path = base.clone();
                                path.push(item);
                                out.push(path);
                            }
                            break;
                        }
                        _ => break,
                    }
                    at += 3;
                }
                out.push(base);
            }
            _ => {}
        }
    }
}

fn is_path_sep(trees: &[TokenTree]) -> bool {
    matches!(
        trees,
        [TokenTree::Punct(a), TokenTree::Punct(b), ..] if a.as_char() == ':' && b.as_char() == ':'
    )
}

/// The first segment of each item of a `use` group: `{a::X, b, c::{..}}`.
fn use_group_heads(tokens: TokenStream) -> Vec<String> {
    let mut heads = Vec::new();
    let mut expecting = true;
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) if expecting => {
                heads.push(ident.to_string());
                expecting = false;
            }
            TokenTree::Punct(p) if p.as_char() == ',' => expecting = true,
            _ => {}
        }
    }
    heads
}

/// The strongly connected components with more than one node.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two nodes are in one cycle when each reaches the other.
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (node, reaches) in &reached {
        let cycle: Vec<String> = reaches
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        if cycle.len() > 1 {
            found.insert(cycle);
        }
    }
    found.into_iter().collect()
}

/// Per parent module, which of its children use which (by the children's
/// names), with the file of one use for the message.
fn sibling_uses(src: &Path) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    // main.rs is the binary's root: its `crate` is another crate.
    files.retain(|f| f.file_name().is_some_and(|n| n != "main.rs"));
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("readable source");
        let tokens = TokenStream::from_str(&text)
            .unwrap_or_else(|e| panic!("{} does not tokenize: {e}", file.display()));
        let mut found = Vec::new();
        paths(tokens, &module, &mut found);
        for path in found {
            // The deepest module the path names (the rest are items).
            let Some(target) = (0..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|p| modules.contains(*p))
            else {
                continue;
            };
            let common = module
                .iter()
                .zip(target)
                .take_while(|(a, b)| a == b)
                .count();
            if common < module.len() && common < target.len() {
                levels
                    .entry(module[..common].to_vec())
                    .or_default()
                    .entry(module[common].clone())
                    .or_default()
                    .insert(target[common].clone());
            }
        }
    }
    levels
}

#[test]
fn no_module_uses_a_sibling_that_uses_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let levels = sibling_uses(&src);
    let mut problems = Vec::new();
    for (parent, graph) in &levels {
        for cycle in cycles(graph) {
            let under = if parent.is_empty() {
                "the crate root".to_string()
            } else {
                parent.join("::")
            };
            let uses: Vec<String> = cycle
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| cycle.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            problems.push(format!("under {under}: {}", uses.join(", ")));
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles between modules:\n{}",
        problems.join("\n")
    );
    // The check reads what it should: the shell uses the wasm host.
    assert!(levels[&Vec::new()]["shell"].contains("wasm_host"));
}

#[test]
fn finds_a_cycle_and_reads_use_groups() {
    let mut found = Vec::new();
    let module = vec!["a".to_string(), "b".to_string()];
    paths(
        TokenStream::from_str(
            "use crate::{x::Y, z}; use super::super::w::V; fn f() { self::inner::g(); }",
        )
        .unwrap(),
        &module,
        &mut found,
    );
    paths(
        TokenStream::from_str("mod tests { use super::T; }").unwrap(),
        &module,
        &mut found,
    );
    let found: BTreeSet<String> = found.iter().map(|p| p.join("::")).collect();
    assert!(found.contains("a::b::T"), "{found:?}");
    assert!(found.contains("x"), "{found:?}");
    assert!(found.contains("z"), "{found:?}");
    assert!(found.contains("w::V"), "{found:?}");
    assert!(found.contains("a::b::inner::g"), "{found:?}");

    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(cycles(&graph), [vec!["a", "b", "c"]]);
}
