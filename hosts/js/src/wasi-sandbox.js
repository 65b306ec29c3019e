// The WASI p2 a plugin's std imports (stdio, environment, exit), given as
// the Rust harness's empty WasiCtx gives them: nothing of the host's. The
// plugin reads an empty, closed stdin; what it writes to stdout and stderr
// goes to its own log (bounded, escaped: see plugin-log.js), never to the
// host's terminal or protocol stream; its environment and arguments are
// empty; `exit` traps, so the shell quarantines the plugin instead of ending.
//
// jco's calling convention for these resources: a method whose result is
// `result<T, stream-error>` returns T or throws the error value
// (`{tag: 'closed'}`); a thrown `Error` is a trap.

import { pushLog } from './plugin-log.js';

const CLOSED = Object.freeze({ tag: 'closed' });

/** How much a plugin may write in one `write` (what `check-write` permits). */
const WRITE_PERMIT = 4096n;

/** `wasi:io/error`'s `error`: nothing here fails with one, but the interface holds it. */
class IoError {
  toDebugString() {
    return 'error';
  }
}

/** `wasi:io/poll`'s `pollable`: every stream here is ready at once. */
class Pollable {
  ready() {
    return true;
  }

  block() {}
}

/** The plugin's stdin: empty and closed. */
class InputStream {
  read(_len) {
    throw CLOSED;
  }

  blockingRead(_len) {
    throw CLOSED;
  }

  skip(_len) {
    throw CLOSED;
  }

  blockingSkip(_len) {
    throw CLOSED;
  }

  subscribe() {
    return new Pollable();
  }
}

/**
 * The plugin's stdout or stderr: each line it writes is one line of its
 * log at `level`, `stdout: ` or `stderr: ` first. A line longer than the
 * log keeps is logged in pieces as it comes, so nothing waits unbounded.
 */
class OutputStream {
  #sink;

  constructor(sink) {
    this.#sink = sink;
  }

  checkWrite() {
    return WRITE_PERMIT;
  }

  write(contents) {
    this.#sink.write(contents);
  }

  blockingWriteAndFlush(contents) {
    this.#sink.write(contents);
  }

  flush() {}

  blockingFlush() {}

  subscribe() {
    return new Pollable();
  }

  writeZeroes(len) {
    this.#sink.write(new Uint8Array(Math.min(Number(len), Number(WRITE_PERMIT))));
  }

  blockingWriteZeroesAndFlush(len) {
    this.writeZeroes(len);
  }

  // Splicing from the closed stdin moves nothing.
  splice(_src, _len) {
    throw CLOSED;
  }

  blockingSplice(_src, _len) {
    throw CLOSED;
  }
}

/** Lines written to one of a plugin's output streams, into its log. */
class LogSink {
  #decoder = new TextDecoder('utf-8');
  #pending = '';

  constructor(log, level, label) {
    this.log = log;
    this.level = level;
    this.label = label;
  }

  write(bytes) {
    this.#pending += this.#decoder.decode(bytes, { stream: true });
    const lines = this.#pending.split('\n');
    this.#pending = lines.pop();
    // A line without its end yet is logged once it passes what a log line keeps.
    if (this.#pending.length > 4096) {
      lines.push(this.#pending);
      this.#pending = '';
    }
    for (const line of lines) this.log(this.level, `${this.label}: ${line}`);
  }
}

/** The plugin asked to end the process: a trap, never the host's `process.exit`. */
class PluginExit extends Error {
  constructor(status) {
    super(`the plugin called exit (${status})`);
    this.name = 'PluginExit';
  }
}

const exitStatus = (status) =>
  status?.tag === 'err' ? 'failure' : status?.tag === 'ok' ? 'success' : String(status);

/** The terminal interfaces: a plugin's stdio is never a terminal. */
class TerminalInput {}
class TerminalOutput {}

/**
 * Every `wasi:cli` and `wasi:io` interface a plugin may import, by name
 * without its version, over the plugin's log: `logs` (an array, see
 * plugin-log.js) or a function `(level, message)` that logs a line (a
 * plugin on its own thread logs through the shell's `log` import).
 */
export function sandboxedWasi(logs) {
  const log = typeof logs === 'function' ? logs : (level, message) => pushLog(logs, level, message);
  const stdout = new LogSink(log, 'info', 'stdout');
  const stderr = new LogSink(log, 'warn', 'stderr');
  return {
    'wasi:cli/environment': {
      getEnvironment: () => [],
      getArguments: () => [],
      initialCwd: () => undefined,
    },
    'wasi:cli/exit': {
      exit(status) {
        throw new PluginExit(exitStatus(status));
      },
      exitWithCode(code) {
        throw new PluginExit(code);
      },
    },
    'wasi:cli/stdin': { getStdin: () => new InputStream() },
    'wasi:cli/stdout': { getStdout: () => new OutputStream(stdout) },
    'wasi:cli/stderr': { getStderr: () => new OutputStream(stderr) },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
    'wasi:io/error': { Error: IoError },
    'wasi:io/poll': {
      Pollable,
      poll: (pollables) => Uint32Array.from(pollables, (_, i) => i),
    },
    'wasi:io/streams': { InputStream, OutputStream },
  };
}
