// Text from the user's files, catalogs or plugins, made safe to print: a
// terminal obeys control characters (escape sequences can rewrite the
// screen, set the window title or hide text), and bidirectional controls
// make text read differently from what it is. Each is shown as an escape
// (`\u{1b}`), as the Rust harness's terminal.rs shows it.

/**
 * What is shown escaped (terminal.rs's `is_unprintable`): control characters (Cc), lone UTF-16
 * surrogates, the bidirectional controls, the line and paragraph separators, and the characters
 * that display as nothing (Default_Ignorable_Code_Point) but for the joiners (U+200C, U+200D)
 * and the variation selectors, which emoji and CJK text are written with.
 */
const UNSAFE = /[\p{Cc}\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e00ff}\u{e01f0}-\u{e0fff}\u2028\u2029]|\p{Cs}/gu;
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

/** What JSON.stringify leaves raw of `UNSAFE`: DEL, C1, and the rest but C0 and surrogates. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e00ff}\u{e01f0}-\u{e0fff}\u2028\u2029]/gu;

/**
 * The characters a tool name may not hold besides whitespace and controls: those that display
 * as nothing (Default_Ignorable_Code_Point) but for the joiners (terminal.rs's `is_name_char`).
 */
export const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e0fff}]/u;

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
