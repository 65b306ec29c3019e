// A plugin's log: its `host.log` lines and what it writes to stdout and
// stderr. A plugin that logs on every call must not grow the shell's memory
// for ever, nor forge lines or move the terminal's cursor when the log is
// shown: as in the Rust harness, the last 256 lines are kept, each cut to
// 4096 bytes of UTF-8 and kept as one line of text with control and bidi
// characters escaped.

import { escape } from './terminal.js';

/** How many of a plugin's log lines are kept (the Rust harness's `KEPT_LOG_LINES`). */
export const KEPT_LOG_LINES = 256;
/** The most of one log message that is kept (the Rust harness's `MAX_LOG_LINE_BYTES`). */
export const MAX_LOG_LINE_BYTES = 4096;

/** `message` within `MAX_LOG_LINE_BYTES` bytes of UTF-8, cut at a character's start, saying how much was cut. */
export function logLine(message) {
  const text = message.toWellFormed();
  if (text.length <= MAX_LOG_LINE_BYTES / 3 || Buffer.byteLength(text) <= MAX_LOG_LINE_BYTES) return text;
  const bytes = Buffer.from(text);
  let end = MAX_LOG_LINE_BYTES;
  // Back to the first byte of the character the cut would split.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return `${bytes.toString('utf8', 0, end)}... (${bytes.length - end} more bytes cut)`;
}

/** Adds a line to `logs` (an array, oldest first), dropping the oldest past `KEPT_LOG_LINES`. */
export function pushLog(logs, level, message) {
  logs.push({ level, message: escape(logLine(message)) });
  if (logs.length > KEPT_LOG_LINES) logs.splice(0, logs.length - KEPT_LOG_LINES);
}
