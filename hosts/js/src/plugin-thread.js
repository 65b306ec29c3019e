// A plugin instance on a thread of its own, so that every call into it has a
// deadline, as in the Rust harness (limits.rs): 50 ms per call, 2 s for the
// calls that may rebuild everything. JavaScript cannot stop a wasm function
// running on its own thread; it can stop a worker thread (`terminate`).
//
// The shell stays synchronous. A call is posted to the plugin's worker
// (plugin-worker.js), then the shell's thread waits (`Atomics.wait` on a
// SharedArrayBuffer, with a timeout) and takes the answer off the port
// (`receiveMessageOnPort`). When the plugin calls one of the shell's imports
// (`registry`, `allowed-tools`, `restrict`, `log`, ...), the worker posts the
// import and waits in turn; the shell's thread, waiting for the answer, runs
// the import where the shell's state lives, posts its result and waits
// again. The time it spends in imports is the shell's, not charged to the
// plugin; the whole call is bounded all the same, at ten times its limit. A
// plugin still running at its deadline is stopped (its worker terminated)
// and the call fails as a trap does: the shell quarantines it.
//
// What crosses between the threads is copied (structured clone): strings,
// bigints, typed arrays, `{tag, val}` variants, `undefined` for `none`. An
// error value (jco's `ComponentError`, whose `payload` is the WIT error) and
// a trap are sent as plain values and made again on this side.

import { performance } from 'node:perf_hooks';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

/** The Rust harness's `Limits::call`: the per-request exports. */
export const CALL_LIMIT_MS = 50;
/**
 * The Rust harness's `Limits::long_call`: configure, agent-created,
 * agent-forked, registry-changed, execute, resolve-call, export-state,
 * restore-state (and, here, instantiation).
 */
export const LONG_CALL_LIMIT_MS = 2000;
/**
 * A call may take this many times its limit in all, the shell's imports
 * included (the Rust harness's `WALL_FACTOR`): a plugin that calls a costly
 * import in a loop spends almost none of its own time.
 */
export const WALL_FACTOR = 10;
/**
 * The key of an import object's function that says how long, in ms, the
 * shell's group loader has run in all (a server may start): that time has a
 * timeout of its own, so the whole call's bound leaves it out (host-imports.js).
 */
export const LOADER_MS = Symbol('group loader ms');
/** How long a new worker may take to load the component's JavaScript (not the plugin's time). */
export const START_LIMIT_MS = 30_000;

/** The exports (jco's names) that get the long deadline, as `CallKind::Long` in the Rust harness. */
const LONG_CALLS = new Set([
  'configure',
  'agentCreated',
  'agentForked',
  'registryChanged',
  'execute',
  'resolveCall',
  'exportState',
  'restoreState',
]);

/** The deadline of export `name` under `limits`, in milliseconds. */
export const limitOf = (name, limits) => (LONG_CALLS.has(name) ? limits.longCall : limits.call);

/** The two counters of the shared buffer: a side adds one to its peer's after each message it posts. */
export const TO_WORKER = 0;
export const TO_HOST = 1;

/** Posts `message` on `port` and wakes the side waiting on counter `at`. */
export function send(port, flags, at, message) {
  port.postMessage(message);
  Atomics.add(flags, at, 1);
  Atomics.notify(flags, at);
}

/**
 * The next message on `port`, waiting on counter `at` for at most `ms`
 * milliseconds (`undefined` when none came in time). The counter is read
 * before the port, so a message posted in between wakes the wait at once.
 */
export function receive(port, flags, at, ms = Infinity) {
  const seen = Atomics.load(flags, at);
  const got = receiveMessageOnPort(port);
  if (got) return got.message;
  if (ms <= 0) return undefined;
  // Most answers come within microseconds: watching the counter a moment
  // is much quicker than being woken from a wait.
  for (let i = 0; i < SPIN && Atomics.load(flags, at) === seen; i++);
  if (Atomics.load(flags, at) === seen) Atomics.wait(flags, at, seen, ms);
  return receiveMessageOnPort(port)?.message;
}

/** How many times `receive` reads the counter before it waits (some microseconds). */
const SPIN = 5000;

/** An exception as a value that survives a structured clone. */
export function describeError(e) {
  if (e instanceof Error) return { name: e.name, message: e.message, stack: e.stack };
  return { name: 'Error', message: String(e) };
}

/** The exception `describeError` described, made again. */
export function rebuildError(error) {
  const e = new Error(error.message);
  e.name = error.name;
  if (error.stack !== undefined) e.stack = error.stack;
  return e;
}

/** An error value the plugin returned (a WIT `result`'s `err`), as jco throws it: `payload` is the value. */
export class PluginErrorValue extends Error {
  constructor(payload) {
    super(typeof payload === 'string' ? payload : `${String(payload)} (see error.payload)`);
    Object.defineProperty(this, 'payload', { value: payload, enumerable: typeof payload !== 'string' });
  }
}

/** A plugin call stopped at its deadline (the Rust harness's `LimitExceeded::Time`). */
export class PluginTimeout extends Error {
  constructor(spentMs, limitMs) {
    super(`ran out of time: still running after ${Math.floor(spentMs)}ms (limit ${limitMs}ms)`);
    this.name = 'PluginTimeout';
  }
}

/** A plugin call stopped at the bound on its whole time, imports included (the Rust harness's `LimitExceeded::WallTime`). */
export class PluginWallTimeout extends Error {
  constructor(elapsedMs, inHostMs, limitMs, wallLimitMs) {
    super(
      `ran out of time: still running ${Math.floor(elapsedMs)}ms after the call began, ${Math.floor(inHostMs)}ms of it ` +
        `in the shell's imports (limit ${limitMs}ms of its own, ${wallLimitMs}ms in all)`,
    );
    this.name = 'PluginTimeout';
  }
}

/** The most linear memory an instance may have held for its worker to serve another instance once it is released. */
export const RECYCLE_MEMORY_BYTES = 64 << 20;

/** The key of the exports' method that stops the instance's thread. */
export const RELEASE = Symbol('release');

/** Stops the worker of an instance the shell dropped without releasing it. */
const dropped = new FinalizationRegistry((worker) => worker.terminate());

const WORKER = new URL('./plugin-worker.js', import.meta.url);

/**
 * A worker that loads the component's JavaScript `glue` (a file URL) with
 * its compiled core `modules` (file name -> WebAssembly.Module), not waited
 * for: a component keeps one ready for its next instance (component.js).
 */
export function startWorker(glue, modules) {
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(WORKER, {
    workerData: { glue, modules, flags, port: port2 },
    transferList: [port2],
    // Nothing the thread writes reaches the shell's stdout or stderr.
    stdout: true,
    stderr: true,
  });
  // The shell's event loop does not wait for a plugin's thread; an error
  // there is read off the port (or the thread is stopped at its deadline).
  worker.unref();
  worker.on('error', () => {});
  return { worker, port: port1, flags };
}

/**
 * One plugin instance on its worker. `imports` is the import object a
 * component is instantiated with (host-imports.js): the functions of every
 * interface but WASI's run here when the plugin calls them; the worker
 * gives the plugin its own sandboxed WASI (wasi-sandbox.js), whose output
 * lines come to the shell's `log` import.
 */
export class PluginThread {
  #port;
  #flags;
  #worker;
  #imports;
  #limits;
  /** Why the thread is stopped; `undefined` while it runs. */
  #stopped;
  /** How many calls into the worker are waiting for their answer (more than one: a call from inside an import). */
  #depth = 0;
  /** The bytes of linear memory the instance held at the end of its last call. */
  memory = 0;

  /**
   * Waits for the worker `started` (startWorker) to load the component,
   * then instantiates it with `imports`; `names` are its exports. Throws
   * when the worker cannot start or instantiation traps or runs past
   * `limits.longCall`.
   */
  constructor(started, imports, limits) {
    ({ worker: this.#worker, port: this.#port, flags: this.#flags } = started);
    this.#imports = imports;
    this.#limits = limits;
    try {
      const remote = Object.entries(imports)
        .filter(([name]) => !name.startsWith('wasi:'))
        .map(([name, iface]) => {
          const functions = Object.keys(iface);
          const other = functions.find((f) => typeof iface[f] !== 'function');
          if (other !== undefined) {
            throw new Error(`import \`${name}\`'s \`${other}\` is not a function: it cannot be called from the plugin's thread`);
          }
          return [name, functions];
        });
      const loaded = this.#answer(START_LIMIT_MS, { imports: false });
      if (loaded.kind === 'failed') throw rebuildError(loaded.error);
      if (loaded.kind !== 'started') throw new Error(`the plugin's thread did not start within ${START_LIMIT_MS}ms`);
      this.names = this.#call('instantiate', [remote], limits.longCall);
    } catch (e) {
      this.stop(e.message);
      throw e;
    }
  }

  /** Calls export `name`: its value, or throws its error value, its trap or its timeout. */
  call(name, args) {
    return this.#call('call', [name, args], limitOf(name, this.#limits));
  }

  /** Stops the worker; every later call fails with `reason`. */
  stop(reason) {
    if (this.#stopped) return;
    this.#stopped = reason;
    this.#worker.terminate();
    this.#port.close();
  }

  /**
   * Lets the instance go. A worker that is not in a call and whose instance
   * held at most `RECYCLE_MEMORY_BYTES` is cleared (the instance dropped)
   * and offered to `recycle`, which takes it for another instance of the
   * same component (true) or not; any other is stopped.
   */
  release(recycle) {
    if (this.#stopped) return;
    if (this.#depth === 0 && this.memory <= RECYCLE_MEMORY_BYTES && recycle) {
      this.#stopped = 'the instance was released';
      const worker = { worker: this.#worker, port: this.#port, flags: this.#flags };
      // The worker drops the instance and answers `started`, as a new one does.
      send(this.#port, this.#flags, TO_WORKER, { kind: 'reset' });
      if (recycle(worker)) return;
      this.#stopped = undefined;
    }
    this.stop('the instance was released');
  }

  /** Why the thread was stopped (or its instance let go); `undefined` while it runs. */
  get stopped() {
    return this.#stopped;
  }

  /** The worker, for a finalizer that must not hold the thread. */
  get worker() {
    return this.#worker;
  }

  #call(kind, args, limit) {
    if (this.#stopped) throw new Error(`the plugin's thread is stopped: ${this.#stopped}`);
    send(this.#port, this.#flags, TO_WORKER, { kind, args });
    let answer;
    this.#depth += 1;
    try {
      answer = this.#answer(limit);
    } finally {
      this.#depth -= 1;
    }
    if (answer.memory !== undefined) this.memory = answer.memory;
    switch (answer.kind) {
      case 'return':
        return answer.value;
      case 'error':
        throw new PluginErrorValue(answer.payload);
      case 'trap':
        throw rebuildError(answer.error);
      case 'timeout':
        this.stop(answer.error.message);
        throw answer.error;
      default:
        throw new Error(`the plugin's thread answered ${JSON.stringify(answer.kind)}`);
    }
  }

  /**
   * Waits for the worker's answer for at most `limit` milliseconds of the
   * plugin's own time, serving the imports it calls meanwhile (their time
   * is not counted), and at most `WALL_FACTOR` times `limit` in all (but for
   * the group loader's runs, which have a timeout of their own). Gives `{kind: 'timeout', error}`
   * past either.
   */
  #answer(limit, { imports = true } = {}) {
    const start = performance.now();
    const wallLimit = limit * WALL_FACTOR;
    let inHost = 0;
    let inTimedHost = 0;
    for (;;) {
      const elapsed = performance.now() - start;
      const spent = elapsed - inHost;
      if (spent >= limit) return { kind: 'timeout', error: new PluginTimeout(spent, limit) };
      const bounded = elapsed - inTimedHost;
      if (bounded >= wallLimit) {
        return { kind: 'timeout', error: new PluginWallTimeout(elapsed, inHost, limit, wallLimit) };
      }
      const message = receive(this.#port, this.#flags, TO_HOST, Math.min(limit - spent, wallLimit - bounded));
      if (message === undefined) continue;
      if (message.kind !== 'import' || !imports) return message;
      const loaderMs = this.#imports[LOADER_MS] ?? (() => 0);
      const [served, loaded] = [performance.now(), loaderMs()];
      this.#serve(message);
      inHost += performance.now() - served;
      inTimedHost += loaderMs() - loaded;
      // The import stopped the thread (a call into the same plugin from inside it ran out of time).
      if (this.#stopped) return { kind: 'trap', error: describeError(new Error(`the plugin's thread was stopped: ${this.#stopped}`)) };
    }
  }

  /** Runs the import the plugin called and posts its result (or what it threw). */
  #serve({ iface, name, args }) {
    let reply;
    try {
      reply = { kind: 'reply', ok: true, value: this.#imports[iface][name](...args) };
    } catch (e) {
      reply = { kind: 'reply', ok: false, error: describeError(e) };
    }
    try {
      send(this.#port, this.#flags, TO_WORKER, reply);
    } catch (e) {
      // A value that cannot be copied to the plugin's thread: the import fails there.
      send(this.#port, this.#flags, TO_WORKER, { kind: 'reply', ok: false, error: describeError(e) });
    }
  }
}

/**
 * The exports of a component instantiated on its own thread: each of the
 * component's `restriction` functions, a synchronous call across, and
 * `thread` (its memory is `thread.memory`). `exports[RELEASE]()` lets the
 * instance go: its worker is offered to `recycle` (PluginThread.release).
 */
export function threadedExports(started, imports, limits, recycle) {
  const thread = new PluginThread(started, imports, limits);
  const exports = {};
  for (const name of thread.names) exports[name] = (...args) => thread.call(name, args);
  exports[RELEASE] = () => {
    dropped.unregister(thread);
    thread.release(recycle);
  };
  // An instance the shell drops without releasing it stops when collected.
  dropped.register(exports, thread.worker, thread);
  return { exports, thread };
}
