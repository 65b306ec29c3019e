// YAML documents as JSON values with the place of every node, so that an
// error found later (by the plugin, in JSON-pointer terms) is shown at the
// user's line and column.

import { Composer, Lexer, Parser, isAlias, isMap, isPair, isScalar, isSeq } from 'yaml';

import { Positions } from './bounded.js';
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

const TOO_MANY_NODES = `the document has more YAML nodes than a file here may have (${MAX_NODES}, an alias's counted each time it is used)`;
const TOO_DEEP = `the document is nested deeper than a file here may be (${MAX_DEPTH})`;


/**
 * Refuses, from the lexer's tokens and before anything is built, a document past the node or
 * depth budget: the library builds every node of a document before it hands one over (an
 * 8 MiB flow list of 4 million items took 38 s and 3.7 GB). What is counted is a lower bound
 * on what the walk counts, so nothing the walk would take is refused: a scalar, an alias and
 * a flow collection are a node each, a `[` or `{` a level deeper. Each other mark (`-`, `?`,
 * `:`, `,`, an anchor, a tag) belongs to a node of its own in a document that is YAML, so more
 * of one kind than the node budget is past it too, and text that is not YAML (a flood of
 * commas or anchors, which the library turns into as many errors) is refused as fast.
 */
function prescan(file, text) {
  const refuse = (offset, message) => {
    const { line, column } = new Positions(text, { bomless: true }).of(offset);
    throw new YamlError(file, line, column, message);
  };
  const marks = new Map();
  let [nodes, depth, offset, scalarText] = [0, 0, 0, false];
  for (const token of new Lexer().lex(text)) {
    const at = offset;
    // The lexer's markers (a document, a flow's end, a scalar next) are not text.
    if (scalarText || !['\x02', '\x18', '\x1f'].includes(token)) offset += token.length;
    let mark;
    if (scalarText) {
      // A plain or block scalar's text, after its marker.
      scalarText = false;
      nodes += 1;
    } else if (token === '\x1f') {
      scalarText = true;
    } else if (token[0] === '"' || token[0] === "'" || token[0] === '*') {
      nodes += 1;
    } else if (token === '[' || token === '{') {
      nodes += 1;
      depth += 1;
      // The root is at depth 0: the walk refuses a node below the 65th level.
      if (depth > MAX_DEPTH + 1) refuse(at, TOO_DEEP);
    } else if (token === ']' || token === '}') {
      if (depth === 0) refuse(at, `a \`${token}\` here closes nothing`);
      depth -= 1;
    } else if (/^[-?:,&!%]/u.test(token) || token === '---' || token === '...') {
      mark = token[0];
      marks.set(mark, (marks.get(mark) ?? 0) + 1);
    }
    if (nodes > MAX_NODES || marks.get(mark) > MAX_NODES) refuse(at, TOO_MANY_NODES);
  }
}

/** A YAML error found while composing, stopped at. */
class FirstError {
  constructor(offset, message) {
    this.offset = offset;
    this.message = message;
  }
}

/**
 * The one document in `text`, composed. The first error stops it: the library would go on
 * and make an error object for every bad token after it (a million stray `]` took 12 s and
 * 1.2 GB), and only the first is shown.
 */
function compose(file, text) {
  // Integers as BigInt, so that one JSON cannot hold exactly is found rather than rounded.
  // Keys are checked for duplicates by the walk, by their JSON form and in linear time: the
  // library's own check tells `1` from `"1"`, and compares every key with every other.
  const composer = new Composer({ version: '1.2', intAsBigInt: true, uniqueKeys: false });
  let first;
  composer.onError = (source, code, message, warning) => {
    if (warning) return;
    const offset = typeof source === 'number' ? source : Array.isArray(source) ? source[0] : source.offset;
    // The library catches what a node's composing throws (this error too, on its way out) and
    // reports it again, as running out of stack: the first error stays the one shown. Block
    // collections nested past the stack are past the depth budget.
    first ??= new FirstError(offset, code === 'RESOURCE_EXHAUSTION' ? TOO_DEEP : message);
    throw first;
  };
  let doc;
  try {
    for (const next of composer.compose(new Parser().parse(text), true, text.length)) {
      if (doc) throw new FirstError(next.range[0], 'the file holds several YAML documents; a file here holds one');
      doc = next;
    }
    if (doc.errors[0]) throw new FirstError(doc.errors[0].pos[0], doc.errors[0].message);
  } catch (e) {
    if (!(e instanceof FirstError)) throw e;
    const { line, column } = new Positions(text, { bomless: true }).of(e.offset);
    throw new YamlError(file, line, column, escape(e.message.split('\n')[0]));
  }
  return doc;
}

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
    prescan(file, text);
    const doc = compose(file, text);
    const places = new Map();
    const positions = new Positions(text, { bomless: true });
    const placeOf = (node) => positions.of(node?.range?.[0] ?? 0);
    let nodes = 0;
    /** Counts `node` against the budgets, as serde-saphyr counts them for the Rust harness (a mapping's keys too). */
    const count = (node, depth) => {
      nodes += 1;
      if (nodes > MAX_NODES || depth > MAX_DEPTH) {
        const { line, column } = placeOf(node);
        throw new YamlError(file, line, column, nodes > MAX_NODES ? TOO_MANY_NODES : TOO_DEEP);
      }
    };
    const walk = (node, pointer, seen, depth = 0) => {
      count(node, depth);
      if (isAlias(node)) {
        const target = node.resolve(doc);
        if (!target || seen.has(target)) {
          const { line, column } = placeOf(node);
          throw new YamlError(file, line, column, `alias \`${escape(node.source)}\` does not resolve`);
        }
        return walk(target, pointer, new Set(seen).add(target), depth);
      }
      if (isMap(node)) {
        const object = {};
        const keys = new Set();
        for (const pair of node.items) {
          count(pair.key, depth + 1);
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
    // The plugin's words, and the config's it quotes, are shown, not obeyed: one line each.
    .map(({ place, message }) => `${place.file}:${place.line}:${place.column}: ${escape(message)}`)
    .join('\n');
}
