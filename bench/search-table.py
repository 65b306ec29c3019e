#!/usr/bin/env python3
"""Prints README.md's search-quality table: every query set, lazy-tools before and after a
change, and the peers, as markdown rows.

    cargo build --profile bench -p host-harness
    python3 bench/openapi/build.py > /tmp/openapi-catalog.json
    python3 bench/openapi/build.py --half second > /tmp/openapi-second.json
    python3 bench/search-table.py --before <an older commit's lazy_tools.wasm>

"Before" runs `bench search --component <before>`, "after" the component the harness was built
with; the peers' rows come from the "after" run (they do not change with the component). A set
whose file is missing (the dev sets outside the project's machines) is left out with a note on
stderr.
"""
import argparse
import subprocess
import sys
from pathlib import Path

LIVEMCP = "catalogs/livemcpbench.json"

# (row label, catalog, query set), in the table's order.
SETS = [
    ("route-dev", LIVEMCP, "../shared/bench/route-dev.jsonl"),
    ("task-dev", LIVEMCP, "../shared/bench/task-dev.jsonl"),
    ("zh", LIVEMCP, "bench/zh.jsonl"),
    ("zh-2", LIVEMCP, "bench/zh-2.jsonl"),
    ("zh-heldout", LIVEMCP, "bench/zh-heldout.jsonl"),
    ("zh-final", LIVEMCP, "bench/zh-final.jsonl"),
    ("zh-3", LIVEMCP, "bench/zh-3.jsonl"),
    ("zh-4", LIVEMCP, "bench/zh-4.jsonl"),
    ("zh-5", LIVEMCP, "bench/zh-5.jsonl"),
    ("zh-6", LIVEMCP, "bench/zh-6.jsonl"),
    ("zh-7", LIVEMCP, "bench/zh-7.jsonl"),
    ("zh-8", LIVEMCP, "bench/zh-8.jsonl"),
    ("zh-9", LIVEMCP, "bench/zh-9.jsonl"),
    ("zh-10", LIVEMCP, "bench/zh-10.jsonl"),
    ("zh-11", LIVEMCP, "bench/zh-11.jsonl"),
    ("zh-12", LIVEMCP, "bench/zh-12.jsonl"),
    ("zh-13", LIVEMCP, "bench/zh-13.jsonl"),
    ("zh-14", LIVEMCP, "bench/zh-14.jsonl"),
    ("zh-15", LIVEMCP, "bench/zh-15.jsonl"),
    ("zh-16", LIVEMCP, "bench/zh-16.jsonl"),
    ("zh-17", LIVEMCP, "bench/zh-17.jsonl"),
    ("zh-18", LIVEMCP, "bench/zh-18.jsonl"),
    ("zh-19", LIVEMCP, "bench/zh-19.jsonl"),
    ("en-paraphrase", LIVEMCP, "bench/en-paraphrase.jsonl"),
    ("en-blind", LIVEMCP, "bench/en-blind.jsonl"),
    ("en-blind-2", LIVEMCP, "bench/en-blind-2.jsonl"),
    ("en-blind-3", LIVEMCP, "bench/en-blind-3.jsonl"),
    ("en-blind-4", LIVEMCP, "bench/en-blind-4.jsonl"),
    ("en-blind-5", LIVEMCP, "bench/en-blind-5.jsonl"),
    ("en-blind-6", LIVEMCP, "bench/en-blind-6.jsonl"),
    ("en-blind-7", LIVEMCP, "bench/en-blind-7.jsonl"),
    ("en-blind-8", LIVEMCP, "bench/en-blind-8.jsonl"),
    ("en-blind-9", LIVEMCP, "bench/en-blind-9.jsonl"),
    ("en-blind-10", LIVEMCP, "bench/en-blind-10.jsonl"),
    ("en-blind-11", LIVEMCP, "bench/en-blind-11.jsonl"),
    ("en-blind-12", LIVEMCP, "bench/en-blind-12.jsonl"),
    ("en-blind-13", LIVEMCP, "bench/en-blind-13.jsonl"),
    ("npm-servers", "catalogs/npm-servers.json", "bench/npm-servers.jsonl"),
    ("openapi (held out)", "/tmp/openapi-catalog.json", "bench/openapi/queries.jsonl"),
    (
        "openapi, second half (never tuned on)",
        "/tmp/openapi-second.json",
        "bench/openapi/queries-second.jsonl",
    ),
    (
        "openapi, second half, second set (never tuned on)",
        "/tmp/openapi-second.json",
        "bench/openapi/queries-second-2.jsonl",
    ),
    (
        "openapi, second half, third set (never tuned on)",
        "/tmp/openapi-second.json",
        "bench/openapi/queries-second-3.jsonl",
    ),
]
PEERS = ("dsh-lazy-tools", "kocoro", "bm25")


def run(harness, catalog, queries, component=None):
    """`bench search`'s figures: {(scorer, kind): [n, hit@1, hit@5, recall@5, mrr@5]}."""
    command = [harness, "bench", "search", "--catalog", catalog, "--queries", queries]
    if component:
        command += ["--component", component]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 7 and fields[0] in ("lazy-tools",) + PEERS:
            rows[(fields[0], fields[1])] = fields[2:]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the older component (lazy_tools.wasm)")
    parser.add_argument("--harness", default="target/release/host-harness")
    args = parser.parse_args()
    for label, catalog, queries in SETS:
        missing = [p for p in (catalog, queries) if not Path(p).exists()]
        if missing:
            print(f"{label}: left out, no {' or '.join(missing)}", file=sys.stderr)
            continue
        before = run(args.harness, catalog, queries, args.before)
        after = run(args.harness, catalog, queries)
        kinds = [kind for (scorer, kind) in after if scorer == "lazy-tools"]
        # A set of one kind prints it twice (`all` and the kind): one row group is enough.
        if len(kinds) == 2:
            kinds = ["all"]
        for kind in kinds:
            name = label if kind == "all" else f"{label}, {kind}"
            n, *figures = after[("lazy-tools", kind)]
            print(f"| {name} | lazy-tools, before | {' | '.join(before[('lazy-tools', kind)])} |")
            print(f"| {name} | **lazy-tools, after** | {n} | " + " | ".join(f"**{f}**" for f in figures) + " |")
            for peer in PEERS:
                print(f"| {name} | {peer} | {' | '.join(after[(peer, kind)])} |")


if __name__ == "__main__":
    main()
