// Text from the user's files, catalogs or plugins, made safe to print: a
// terminal obeys control characters (escape sequences can rewrite the
// screen, set the window title or hide text), and bidirectional controls
// make text read differently from what it is. Each is shown as an escape
// (`\u{1b}`), as the Rust harness's terminal.rs shows it.

/**
 * Control characters (Cc), the bidirectional controls, lone UTF-16 surrogates, the line and
 * paragraph separators and the invisible characters that make two names print alike (zero-width
 * space, word joiner, byte-order mark, soft hyphen, Hangul fillers, tags, ...), as terminal.rs's
 * `is_unprintable`.
 */
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200b\u2060-\u2064\ufeff\u00ad\u034f\u180e\u115f\u1160\u3164\uffa0\u{e0000}-\u{e007f}]|\p{Cs}/gu;
const SHORT = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

const escapeChar = (c) => SHORT[c] ?? `\\u{${c.codePointAt(0).toString(16)}}`;

/** `text` with every control character (newlines too: a value is one line) and bidi control escaped. */
export function escape(text) {
  return String(text).replace(UNSAFE, escapeChar);
}

/** A whole message of several lines: like `escape`, but newlines stay. */
export function escapeMessage(text) {
  return String(text).replace(UNSAFE, (c) => (c === '\n' ? c : escapeChar(c)));
}

/** What JSON.stringify leaves raw in a string of `UNSAFE`: DEL, C1, bidi controls, separators, invisibles. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200b\u2060-\u2064\ufeff\u00ad\u034f\u180e\u115f\u1160\u3164\uffa0\u{e0000}-\u{e007f}]/gu;

/** The invisible characters a tool name may not hold (it would print as another's). */
export const INVISIBLE = /[\u200b\u2060-\u2064\ufeff\u00ad\u034f\u180e\u115f\u1160\u3164\uffa0\u{e0000}-\u{e007f}]/u;

/**
 * `value` as JSON that is safe to print (terminal.rs's `json`): JSON.stringify escapes only
 * U+0000 to U+001F and lone surrogates, so the other controls and the bidirectional ones are
 * written as `\uXXXX` too. The text is still JSON and reads back as the same value.
 */
export function json(value) {
  // Each UTF-16 unit of the character: a tag character (U+E0020) is two.
  const units = (c) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');
  return JSON.stringify(value)?.replace(UNSAFE_IN_JSON, units);
}

/** Whether `c` is one of the bidirectional controls (the plugin's `is_bidi_control`). */
export const BIDI_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
