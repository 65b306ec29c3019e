// YAML documents as JSON values with the place of every node, so that an
// error found later (by the plugin, in JSON-pointer terms) is shown at the
// user's line and column.

import { LineCounter, isAlias, isMap, isPair, isScalar, isSeq, parseDocument } from 'yaml';

import { escape } from './terminal.js';

export class YamlError extends Error {
  constructor(file, line, column, message) {
    super(`${file}:${line}:${column}: ${message}`);
    this.name = 'YamlError';
    this.place = { file, line, column };
  }
}

const escapeKey = (key) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The Rust harness's limits on a YAML file (its `MAX_FILE_BYTES` and
 * serde-saphyr's node and depth budgets): real files are a few KiB; more is
 * a mistake, or an attack on the shell's memory. Nodes are counted as read,
 * an alias's every time it is used, so that a few lines of aliases of
 * aliases cannot stand for billions of values.
 */
export const MAX_FILE_BYTES = 8 << 20;
export const MAX_NODES = 250_000;
export const MAX_DEPTH = 64;

export class LocatedValue {
  /**
   * Parses `text`, read from `file` (used in messages only). Booleans are
   * YAML 1.2's (`true`, `false`): a tool named `no` or `on` stays a string.
   */
  static parse(file, text) {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_FILE_BYTES) {
      throw new YamlError(file, 1, 1, `the file is ${bytes} bytes, larger than ${MAX_FILE_BYTES >> 20} MiB, the most a YAML file here may have`);
    }
    const lineCounter = new LineCounter();
    // Integers as BigInt, so that one JSON cannot hold exactly is found rather than rounded.
    // Keys are checked for duplicates below, by their JSON form and in linear time: the
    // library's own check tells `1` from `"1"`, and compares every key with every other.
    const doc = parseDocument(text, { version: '1.2', lineCounter, prettyErrors: false, intAsBigInt: true, uniqueKeys: false });
    const problem = doc.errors[0];
    if (problem) {
      const { line, col } = lineCounter.linePos(problem.pos[0]);
      throw new YamlError(file, line, col, problem.message.split('\n')[0]);
    }
    const places = new Map();
    const placeOf = (node) => {
      const { line, col } = lineCounter.linePos(node?.range?.[0] ?? 0);
      return { line, column: col };
    };
    let nodes = 0;
    const walk = (node, pointer, seen, depth = 0) => {
      nodes += 1;
      if (nodes > MAX_NODES || depth > MAX_DEPTH) {
        const { line, column } = placeOf(node);
        const message =
          nodes > MAX_NODES
            ? `the document has more YAML nodes than a file here may have (${MAX_NODES}, an alias's counted each time it is used)`
            : `the document is nested deeper than a file here may be (${MAX_DEPTH})`;
        throw new YamlError(file, line, column, message);
      }
      if (isAlias(node)) {
        const target = node.resolve(doc);
        if (!target || seen.has(target)) {
          const { line, column } = placeOf(node);
          throw new YamlError(file, line, column, `alias \`${node.source}\` does not resolve`);
        }
        return walk(target, pointer, new Set(seen).add(target), depth);
      }
      if (isMap(node)) {
        const object = {};
        const keys = new Set();
        for (const pair of node.items) {
          const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
          // Keys YAML tells apart (`1` and `"1"`, `~` and `null`) are one JSON key: the first
          // would be lost without a word.
          if (keys.has(key)) {
            const { line, column } = placeOf(pair.key);
            throw new YamlError(file, line, column, `duplicate key \`${escape(key)}\``);
          }
          keys.add(key);
          const at = `${pointer}/${escapeKey(key)}`;
          // Defined, not assigned: `__proto__: ...` would set the object's prototype, and the
          // entry would vanish from the value (and from a check of its keys).
          Object.defineProperty(object, key, {
            value: walk(pair.value, at, seen, depth + 1),
            enumerable: true,
            writable: true,
            configurable: true,
          });
          // A mapping entry is shown at its key.
          places.set(at, placeOf(pair.key));
        }
        return object;
      }
      if (isSeq(node)) {
        return node.items.map((item, i) => {
          const at = `${pointer}/${i}`;
          places.set(at, placeOf(item));
          return walk(item, at, seen, depth + 1);
        });
      }
      if (isScalar(node)) return number(node) ?? node.value ?? null;
      if (isPair(node)) return walk(node.value, pointer, seen, depth);
      return null;
    };
    /** A scalar's number as JSON holds it, or undefined when it is not one; refused when JSON cannot. */
    const number = (node) => {
      const { value } = node;
      const refuse = (message) => {
        const { line, column } = placeOf(node);
        throw new YamlError(file, line, column, message);
      };
      if (typeof value === 'bigint') {
        if (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
        refuse(
          `the number ${escape(node.source ?? value)} is an integer too large to be read exactly (past 2^53); write it in quotes to pass it as text`,
        );
      }
      if (typeof value === 'number' && !Number.isFinite(value)) {
        refuse(`the number ${escape(node.source ?? value)} has no JSON form; write it in quotes to pass it as text`);
      }
      return typeof value === 'number' ? value : undefined;
    };
    places.set('', placeOf(doc.contents));
    const value = walk(doc.contents, '', new Set());
    return new LocatedValue(file, value, places);
  }

  constructor(file, value, places) {
    this.file = file;
    this.value = value;
    this.places = places;
  }

  /**
   * Where the node at `pointer` was written: a mapping entry at its key, a
   * list item at the item. A pointer that does not exist falls back to its
   * nearest ancestor.
   */
  place(pointer) {
    for (let at = pointer; ; at = at.slice(0, at.lastIndexOf('/'))) {
      const place = this.places.get(at);
      if (place) return { file: this.file, ...place };
      if (at === '') return { file: this.file, line: 1, column: 1 };
    }
  }
}

/**
 * The plugin's config errors, one line each (`file:line:column: message`),
 * at the YAML place of the node each one points at, in file order.
 */
export function renderConfigErrors(config, errors) {
  return errors
    .map((e) => ({ place: config.place(e.pointer), message: e.message }))
    .sort((a, b) => a.place.line - b.place.line || a.place.column - b.place.column)
    .map(({ place, message }) => `${place.file}:${place.line}:${place.column}: ${message}`)
    .join('\n');
}
