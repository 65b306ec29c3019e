// Reading a file the user names, within a size, as the Rust harness's
// bounded.rs: a path can name `/dev/zero`, a FIFO or a file of gigabytes, and
// reading it whole would hang the shell or exhaust its memory.

import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

import { escape } from './terminal.js';

/** The most a catalog file may hold: a catalog of 100,000 real tools is about 100 MB. */
export const MAX_CATALOG_BYTES = 256 << 20;
/** The most a component file may hold: lazy-tools' is about 3 MB. */
export const MAX_COMPONENT_BYTES = 256 << 20;

/** A file refused, with the reason (`code`: the system's, or one of ours). */
function refused(path, code, message) {
  return Object.assign(new Error(`reading ${escape(path)}: ${message}`), { code });
}

/**
 * The bytes of the regular file at `path`, refused when it is not a regular file or holds more
 * than `limit` bytes (without reading more than that). `what` names the file in the error
 * (`a catalog`). A file that does not exist throws the system's error (`code` `ENOENT`).
 */
export function readBounded(path, limit, what) {
  // Opening a FIFO for reading waits for a writer: without O_NONBLOCK the open itself would
  // hang before the file's type could be checked. A regular file ignores the flag.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw refused(path, 'EINVAL', `not a regular file; ${what} must be one`);
    const chunks = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(limit + 1 - total, 1 << 20));
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      total += read;
      if (total > limit) {
        throw refused(path, 'EFBIG', `the file is larger than ${limit >> 20} MiB, the most ${what} may have`);
      }
    }
    return Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** How many bytes at the start of `bytes` are whole UTF-8 characters: where it stops being UTF-8. */
function utf8ValidUpTo(bytes) {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    if (b < 0x80) {
      i += 1;
      continue;
    }
    const more = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (more < 0 || i + more >= bytes.length) return i;
    // Overlong forms, surrogates and code points past U+10FFFF.
    const second = bytes[i + 1];
    if ((b === 0xe0 && second < 0xa0) || (b === 0xed && second > 0x9f) || (b === 0xf0 && second < 0x90) || (b === 0xf4 && second > 0x8f)) {
      return i;
    }
    for (let k = 1; k <= more; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return i;
    i += more + 1;
  }
  return bytes.length;
}

/**
 * `readBounded` as UTF-8 text. Bytes that are not UTF-8 are refused at their place
 * (`file:line:column`), where a lenient decoding would put U+FFFD in their stead without a word.
 */
export function readText(path, limit, what) {
  const bytes = readBounded(path, limit, what);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    const valid = utf8ValidUpTo(bytes);
    const before = bytes.subarray(0, valid).toString('utf8');
    const { line, column } = place(before, before.length);
    throw Object.assign(new Error(`${escape(path)}:${line}:${column}: not UTF-8 text (byte ${valid})`), { code: 'EILSEQ' });
  }
}

/**
 * Where the string that starts at `start` in `text` ends (its closing quote), or where it
 * stops being a JSON string (a control character, a bad escape, the text's end). A loop, not a
 * regular expression: V8's backtracking overflowed its stack on a string of some millions of
 * characters (an icon's data URL).
 */
function stringRest(text, start) {
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 34) return i;
    if (c < 0x20) return i;
    if (c === 92) {
      const e = text[i + 1];
      if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
      else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
      else return i;
    } else {
      i += 1;
    }
  }
  return i;
}

/**
 * Where JSON.parse found `text` not to be JSON, and what it expected there: V8's message
 * quotes the text rather than saying where, for some errors. Found without recursion, as
 * JSON.parse reads any depth.
 */
function jsonError(text) {
  const stack = [];
  let i = 0;
  let want = 'value';
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const LITERAL = /true|false|null/y;
  const at = (re) => {
    re.lastIndex = i;
    return re.test(text) ? re.lastIndex : -1;
  };
  for (;;) {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i += 1;
    const c = text[i];
    if (want === 'value' || want === 'value or `]`') {
      if (want === 'value or `]`' && c === ']') {
        stack.pop();
        [i, want] = [i + 1, 'end'];
      } else if (c === '{' || c === '[') {
        stack.push(c);
        [i, want] = [i + 1, c === '{' ? 'a key or `}`' : 'value or `]`'];
      } else if (c === '"') {
        const end = stringRest(text, i);
        if (text[end] !== '"') return { offset: end, expected: 'the rest of a string (a control character or a bad escape is in it, or it never ends)' };
        [i, want] = [end + 1, 'end'];
      } else {
        const end = Math.max(at(NUMBER), at(LITERAL));
        if (end < 0) return { offset: i, expected: 'a value' };
        [i, want] = [end, 'end'];
      }
    } else if (want === 'a key or `}`' || want === 'a key') {
      if (want === 'a key or `}`' && c === '}') {
        stack.pop();
        [i, want] = [i + 1, 'end'];
      } else if (c === '"') {
        const end = stringRest(text, i);
        if (text[end] !== '"') return { offset: end, expected: 'the rest of a string (a control character or a bad escape is in it, or it never ends)' };
        [i, want] = [end + 1, '`:`'];
      } else {
        return { offset: i, expected: 'a key, in double quotes' };
      }
    } else if (want === '`:`') {
      if (c !== ':') return { offset: i, expected: '`:`' };
      [i, want] = [i + 1, 'value'];
    } else if (stack.length === 0) {
      return { offset: i, expected: 'nothing after the value' };
    } else {
      const top = stack.at(-1);
      const close = top === '{' ? '}' : ']';
      if (c === ',') [i, want] = [i + 1, top === '{' ? 'a key' : 'value'];
      else if (c === close) [i, want] = [i + 1, stack.pop() && 'end'];
      else return { offset: i, expected: `\`,\` or \`${close}\`` };
    }
  }
}

/**
 * The first key that one object of `text` (JSON that JSON.parse has read) names twice, and
 * where: JSON.parse keeps the last and drops the first without a word (a schema's second
 * `properties` replaced the first), where the Rust harness refuses the file.
 */
function repeatedKey(text) {
  const open = []; // a Set of keys per open object, null per open array
  let keyNext = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      const end = stringRest(text, i) + 1;
      if (keyNext) {
        const key = JSON.parse(text.slice(i, end));
        const keys = open.at(-1);
        if (keys.has(key)) return { offset: i, key };
        keys.add(key);
        keyNext = false;
      }
      i = end - 1;
    } else if (c === '{') {
      open.push(new Set());
      keyNext = true;
    } else if (c === '[') {
      open.push(null);
    } else if (c === '}' || c === ']') {
      open.pop();
      keyNext = false;
    } else if (c === ',') {
      keyNext = open.at(-1) instanceof Set;
    }
  }
  return null;
}

/**
 * Where each UTF-16 offset of one text is: its line and its column, both from 1, the column in
 * characters (code points), as an editor and the Rust harness count it. A character past
 * U+FFFF (an emoji) is two UTF-16 units and one column. Each lookup is a binary search: a YAML
 * file places every one of its nodes. With `bomless`, a byte-order mark at the start is no
 * column, as the Rust harness's YAML parser counts it.
 */
export class Positions {
  constructor(text, { bomless = false } = {}) {
    this.lineStarts = [0];
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', nl + 1)) this.lineStarts.push(nl + 1);
    // The offset of the second unit of each character past U+FFFF.
    this.trails = [];
    for (const pair of text.matchAll(/[\ud800-\udbff][\udc00-\udfff]/g)) this.trails.push(pair.index + 1);
    this.bom = bomless && text.startsWith('\ufeff') ? 1 : 0;
  }

  /** The line and column of `offset`. */
  of(offset) {
    const line = firstAbove(this.lineStarts, offset);
    const start = this.lineStarts[line - 1] + (line === 1 ? Math.min(this.bom, offset) : 0);
    const pairs = firstAbove(this.trails, offset - 1) - firstAbove(this.trails, start);
    return { line, column: offset - start - pairs + 1 };
  }
}

/** How many of `sorted`'s numbers are at most `value`. */
function firstAbove(sorted, value) {
  let [low, high] = [0, sorted.length];
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid] <= value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * The line and column of UTF-16 offset `offset` in `text`, as [`Positions`] gives them, for one
 * place: no table (a 256 MiB catalog of line breaks would not fit one), only the text before it read.
 */
function place(text, offset) {
  let [line, start] = [1, 0];
  for (let nl = text.indexOf('\n'); nl !== -1 && nl < offset; nl = text.indexOf('\n', nl + 1)) {
    line += 1;
    start = nl + 1;
  }
  let column = offset - start + 1;
  for (let i = start + 1; i < offset; i += 1) {
    const unit = text.charCodeAt(i);
    const lead = text.charCodeAt(i - 1);
    if (unit >= 0xdc00 && unit <= 0xdfff && lead >= 0xd800 && lead <= 0xdbff) column -= 1;
  }
  return { line, column };
}

/**
 * `text`, read from `path`, as JSON; else where it is not (`file:line:column`) and what was
 * expected there, or where an object names a key twice.
 */
export function parseJsonFile(path, text, what) {
  // A byte-order mark at the very start (an editor's) is no part of the JSON, as in catalog.rs.
  if (text.startsWith('\ufeff')) text = text.slice(1);
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    const { offset, expected } = jsonError(text);
    const { line, column } = place(text, offset);
    const found = offset >= text.length ? 'the end of the file' : `\`${escape(String.fromCodePoint(text.codePointAt(offset)))}\``;
    throw new Error(`${escape(path)}:${line}:${column}: ${what} is not JSON here: expected ${expected}, found ${found}`);
  }
  const repeated = repeatedKey(text);
  if (repeated) {
    const { line, column } = place(text, repeated.offset);
    throw new Error(`${escape(path)}:${line}:${column}: ${what} names the key \`${escape(repeated.key)}\` twice in one object (only one can be meant)`);
  }
  return value;
}
