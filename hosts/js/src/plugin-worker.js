// The thread one plugin instance runs on (plugin-thread.js has the shell's
// side). It loads the component's JavaScript, then serves the shell's
// messages synchronously, never returning to its event loop: `instantiate`,
// then one `call` after another. An import the plugin calls is posted to
// the shell, which runs it and posts the result back; while the worker
// waits for it, a call the shell makes from inside that import is served.
//
// The plugin's WASI is the sandbox the shell would give it (wasi-sandbox.js),
// here beside it: what it writes to stdout and stderr goes, line by line,
// to the shell's `log` import.

import { workerData } from 'node:worker_threads';

import * as wasiRandom from '@bytecodealliance/preview2-shim/random';

import { TO_HOST, TO_WORKER, describeError, rebuildError, receive, send } from './plugin-thread.js';
import { sandboxedWasi } from './wasi-sandbox.js';

const { glue, modules, flags, port } = workerData;
const post = (message) => send(port, flags, TO_HOST, message);
const next = () => receive(port, flags, TO_WORKER);

/** The instance's linear memories, for the memory it holds after each call. */
const memories = [];
const memoryBytes = () => memories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
let exports;

/** Calls the shell's import `name` of interface `iface`: its result, or what it threw. */
function callHost(iface, name, args) {
  post({ kind: 'import', iface, name, args });
  for (;;) {
    const message = next();
    if (message === undefined) continue;
    if (message.kind !== 'reply') {
      handle(message);
      continue;
    }
    if (message.ok) return message.value;
    throw rebuildError(message.error);
  }
}

/** The import object: the shell's interfaces called across, WASI and randomness here. */
function importObject(remote) {
  const imports = {};
  for (const [iface, functions] of remote) {
    imports[iface] = Object.fromEntries(functions.map((name) => [name, (...args) => callHost(iface, name, args)]));
  }
  const log = (level, message) => callHost('dsh:tool-restriction/host', 'log', [level, message]);
  return {
    ...imports,
    ...sandboxedWasi(log),
    'wasi:random/insecure-seed': wasiRandom.insecureSeed,
    'wasi:random/random': wasiRandom.random,
    'wasi:random/insecure': wasiRandom.insecure,
  };
}

function instantiate(instantiateWith, remote) {
  const instantiateCore = (module, importObject) => {
    const instance = new WebAssembly.Instance(module, importObject);
    for (const value of Object.values(instance.exports)) {
      if (value instanceof WebAssembly.Memory) memories.push(value);
    }
    return instance;
  };
  const getCoreModule = (file) => {
    const module = modules[file];
    if (module === undefined) throw new Error(`the component has no core module ${file}`);
    return module;
  };
  exports = instantiateWith(getCoreModule, importObject(remote), instantiateCore).restriction;
  return Object.keys(exports).filter((name) => typeof exports[name] === 'function');
}

/** Runs one message of the shell's and posts the answer. */
function handle({ kind, args }) {
  if (kind === 'reset') {
    // The shell let the instance go: this thread will serve a new one.
    exports = undefined;
    memories.length = 0;
    post({ kind: 'started' });
    return;
  }
  let answer;
  try {
    if (kind === 'instantiate') answer = { kind: 'return', value: instantiate(instantiateWith, ...args) };
    else if (kind === 'call') answer = { kind: 'return', value: exports[args[0]](...args[1]) };
    else throw new Error(`the plugin's thread got a message it does not know: ${JSON.stringify(kind)}`);
  } catch (e) {
    // jco throws an error value as a `ComponentError` holding it in `payload`; anything else is a trap.
    answer =
      e !== null && typeof e === 'object' && Object.hasOwn(e, 'payload')
        ? { kind: 'error', payload: e.payload }
        : { kind: 'trap', error: describeError(e) };
  }
  answer.memory = memoryBytes();
  try {
    post(answer);
  } catch (e) {
    post({ kind: 'trap', error: describeError(e), memory: answer.memory });
  }
}

let instantiateWith;
try {
  ({ instantiate: instantiateWith } = await import(glue));
  post({ kind: 'started' });
} catch (e) {
  post({ kind: 'failed', error: describeError(e) });
}
for (;;) {
  const message = next();
  if (message !== undefined) handle(message);
}
