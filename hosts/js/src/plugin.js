// One instantiated plugin, with the contract's errors as values.
//
// jco turns a `result` the plugin returns as `err` into a thrown
// `ComponentError` whose own `payload` property holds the error value; any
// other exception is a trap. Here an error value comes back as
// `{ok: false, error}` and a trap is thrown as a `PluginTrap`. A call past
// its deadline (plugin-thread.js) is a trap too.

import { RELEASE } from './plugin-thread.js';
import { escape } from './terminal.js';

export class PluginTrap extends Error {
  constructor(plugin, call, cause) {
    super(`plugin \`${plugin}\` trapped in ${call}: ${cause?.message ?? cause}`, { cause });
    this.name = 'PluginTrap';
  }
}

/** A `plugin-error` for people: the plugin's words, shown as text, never obeyed by a terminal. */
export function describePluginError(error) {
  switch (error?.tag) {
    case 'not-configured':
      return 'the plugin is not configured';
    case 'unknown-agent':
      return `unknown agent \`${escape(error.val)}\``;
    case 'unknown-tool':
      return `unknown tool \`${escape(error.val)}\``;
    case 'host':
      return `the host refused: ${escape(error.val)}`;
    default:
      return escape(JSON.stringify(error));
  }
}

/** A `config-error` for people. */
export function describeConfigError(error) {
  return error.pointer ? `${error.pointer}: ${error.message}` : error.message;
}

/**
 * The linear memory one plugin instance may hold (the Rust harness's
 * `Limits::memory_bytes`). wasm in node cannot refuse a `memory.grow` past
 * it, so it is checked after each call: a plugin found above it is failed
 * as if it trapped, and the shell quarantines it.
 */
export const MAX_PLUGIN_MEMORY_BYTES = 256 << 20;

/**
 * The text one call may return (the Rust harness's `Limits::returned_bytes`): a system prompt,
 * a tool's result, the names an agent sees. A call that returns more fails as if it trapped.
 * A state `export-state` returns is left out, as there: it has its own bound where the shell
 * saves it.
 */
export const MAX_PLUGIN_RETURNED_BYTES = 16 << 20;

/** The largest state a shell restores (lazy-tools' `MAX_STATE_BYTES`): a larger one is not saved. */
export const MAX_STATE_BYTES = 16 << 20;

/**
 * The bytes of text in a value a plugin returned, plus one per list item (a list of a million
 * empty strings is not empty to the shell); a variant's tag is not counted (wasm_host/returned.rs).
 * `measure` counts a string: its UTF-8 bytes, or a bound on them.
 */
export function returnedBytes(value, measure = (text) => Buffer.byteLength(text, 'utf8')) {
  if (typeof value === 'string') return measure(value);
  if (Array.isArray(value)) {
    let sum = value.length;
    for (const item of value) sum += returnedBytes(item, measure);
    return sum;
  }
  if (value !== null && typeof value === 'object') {
    let sum = 0;
    for (const key in value) if (key !== 'tag') sum += returnedBytes(value[key], measure);
    return sum;
  }
  return 0;
}

/**
 * `returnedBytes(value)` if it may be past `limit`, else a bound under it: a UTF-16 unit is at
 * most three bytes of UTF-8, so most answers (ten thousand names each request) are known to be
 * within the limit without encoding them.
 */
function returnedBytesPast(value, limit) {
  const bound = returnedBytes(value, (text) => 3 * text.length);
  return bound <= limit ? bound : returnedBytes(value);
}

export class PluginInstance {
  /**
   * @param {string} id the plugin's id in the shell
   * @param {object} exports the component's `restriction` interface
   * @param {Array<{level: string, message: string}>} logs filled by `host.log`
   * @param {() => number} memoryBytes the linear memory the instance holds now
   */
  constructor(id, exports, logs, memoryBytes = () => 0) {
    this.id = id;
    this.exports = exports;
    this.logs = logs;
    this.memoryBytes = memoryBytes;
  }

  /** Lets the instance go (its memory and its thread with it): the shell never calls it again. */
  release() {
    this.exports?.[RELEASE]?.();
    this.exports = undefined;
    this.memoryBytes = () => 0;
  }

  /** Calls export `name`; a thrown payload is an error value, anything else a trap. */
  #call(name, ...args) {
    if (this.exports === undefined) throw new PluginTrap(this.id, name, new Error('the instance was released'));
    let result;
    try {
      result = { ok: true, value: this.exports[name](...args) };
    } catch (e) {
      if (e === null || typeof e !== 'object' || !Object.hasOwn(e, 'payload')) throw new PluginTrap(this.id, name, e);
      result = { ok: false, error: e.payload };
    }
    // A state has its own bound where the shell saves it (`MAX_STATE_BYTES`); its error does not.
    const returned =
      name === 'exportState' && result.ok ? 0 : returnedBytesPast(result.ok ? result.value : result.error, MAX_PLUGIN_RETURNED_BYTES);
    if (returned > MAX_PLUGIN_RETURNED_BYTES) {
      throw new PluginTrap(
        this.id,
        name,
        new Error(`returned too much: ${returned} bytes (limit ${MAX_PLUGIN_RETURNED_BYTES})`),
      );
    }
    const memory = this.memoryBytes();
    if (memory > MAX_PLUGIN_MEMORY_BYTES) {
      throw new PluginTrap(
        this.id,
        name,
        new Error(`ran out of memory: it holds ${memory} bytes of linear memory (limit ${MAX_PLUGIN_MEMORY_BYTES})`),
      );
    }
    return result;
  }

  /** Calls an export whose result has no error case. */
  #infallible(name, ...args) {
    const result = this.#call(name, ...args);
    if (!result.ok) throw new PluginTrap(this.id, name, new Error('unexpected error value'));
    return result.value;
  }

  /** `{ok: true}` or `{ok: false, error: config-error[]}`. */
  configure(configJson) {
    return this.#call('configure', configJson);
  }

  guardTools() {
    return this.#infallible('guardTools');
  }

  agentCreated(agent, parent) {
    return this.#call('agentCreated', agent, parent ?? undefined);
  }

  agentDisposed(agent) {
    this.#infallible('agentDisposed', agent);
  }

  registryChanged() {
    return this.#call('registryChanged');
  }

  /** `{ok: true, value: string[]}` or a plugin error. */
  visibleTools(agent) {
    return this.#call('visibleTools', agent);
  }

  /** `{tag: 'pass'}` or `{tag: 'deny', val: reason}`. */
  preExecute(agent, tool, argumentsJson) {
    return this.#infallible('preExecute', agent, tool, argumentsJson);
  }

  /** `{ok: true, value: {json, text, isError}}` or a plugin error. */
  execute(agent, tool, argumentsJson) {
    return this.#call('execute', agent, tool, argumentsJson);
  }

  /** `{ok: true, value: string | undefined}` or a plugin error. */
  systemPrompt(agent) {
    return this.#call('systemPrompt', agent);
  }

  /** `{ok: true, value: {state, rule, summary}}` or a plugin error. */
  explain(agent, tool) {
    return this.#call('explain', agent, tool);
  }

  /** `agent-forked` (0.3.0): the agent continues `source`'s conversation. */
  agentForked(agent, parent, source) {
    return this.#call('agentForked', agent, parent ?? undefined, source);
  }

  /** `{ok: true, value: {explanation: {state, rule, summary}, pointer}}` or a plugin error. */
  explainLocated(agent, tool) {
    return this.#call('explainLocated', agent, tool);
  }

  /**
   * `resolve-call` (0.3.0): `{ok: true, value: {tag: 'direct'} | {tag: 'forward', val:
   * {tool, arguments, implicitlyLoaded}} | {tag: 'reject', val: tool-result}}` or a plugin error.
   */
  resolveCall(agent, tool, argumentsJson) {
    return this.#call('resolveCall', agent, tool, argumentsJson);
  }

  /** `{ok: true, value: json}` or a plugin error. */
  exportState() {
    return this.#call('exportState');
  }

  /** `{ok: true}` or `{ok: false, error: message}`. */
  restoreState(state) {
    return this.#call('restoreState', state);
  }

  dispose() {
    this.#infallible('dispose');
  }
}
