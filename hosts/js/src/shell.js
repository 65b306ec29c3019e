// The agent shell: a tool registry, agents with their scope chain,
// restriction layers, a pre-execute waterfall, prompt assembly, and
// restriction plugins running as WebAssembly components through jco.

import { createHash } from 'node:crypto';

import { ShellCore, originName } from './core.js';
import { importObject } from './host-imports.js';
import { MAX_STATE_BYTES, PluginInstance, PluginTrap, describeConfigError, describePluginError } from './plugin.js';
import { pushLog } from './plugin-log.js';
import { escape } from './terminal.js';
import { Tool, ofAgent } from './tools.js';

/** The most a call's arguments may hold, as JSON text (the Rust harness's limit). */
export const MAX_ARGUMENT_BYTES = 8 << 20;

/** A plugin rejected its config; `errors` are its `config-error`s. */
export class ConfigRejected extends Error {
  constructor(plugin, errors) {
    // Each error one line, shown as text: the plugin's words, and the config's it quotes, are not obeyed.
    const lines = errors.map((e) => `  ${escape(describeConfigError(e))}`).join('\n');
    super(`plugin \`${escape(plugin)}\` rejected its config:\n${lines}`);
    this.name = 'ConfigRejected';
    this.errors = errors;
  }
}

/** A `result` value from a plugin, or an error that says which plugin and what. */
function unwrap(plugin, result) {
  if (result.ok) return result.value;
  throw new Error(`plugin \`${plugin.id}\`: ${describePluginError(result.error)}`);
}

/** An id's depth in the agent tree: its number of slashes. */
const depth = (id) => id.split('/').length - 1;

/** What a trapped plugin call gave instead of a value: the plugin is quarantined. */
const TRAPPED = Symbol('trapped');

/** Why a plugin call failed, for people: the trap's message (a limit it hit, `exit`, `unreachable`). */
const failureReason = (trap) => escape(trap.cause?.message ?? String(trap.cause ?? trap.message));

/** Why the shell stopped calling a plugin: it trapped (or ran out of memory) in `during`. */
export class Quarantine {
  constructor(plugin, during, reason) {
    this.plugin = plugin;
    /** The export that failed (`visible-tools`, ...). */
    this.during = during;
    this.reason = reason;
  }

  toString() {
    return `plugin \`${this.plugin}\` is disabled: it failed in ${this.during} (${this.reason}); its restrictions and tools are lifted`;
  }
}

export class Shell {
  core = new ShellCore();
  /** @type {Array<{id: string, instance: PluginInstance, guards: Tool[], quarantined?: Quarantine}>} */
  plugins = [];
  /** Native pre-execute hooks, run before the plugins': [name, (agent, tool, args) => verdict]. */
  hooks = [];

  /** The plugins the shell stopped calling, and why. */
  quarantined() {
    return this.plugins.filter((p) => p.quarantined).map((p) => p.quarantined);
  }

  /** Registers tools and tells every plugin once; a tool refused registers none of them. */
  registerTools(tools) {
    this.#registerAll(tools);
    this.#notifyRegistryChanged();
  }

  /**
   * Registers a catalog's MCP servers (with their descriptions) and tools.
   * The whole catalog is checked first: one that is not valid registers
   * nothing.
   */
  registerCatalog(catalog) {
    const tools = catalogTools(catalog);
    const before = new Map(this.core.groups);
    for (const server of catalog.servers) this.core.setGroup(server.name, server.description ?? '');
    try {
      this.#registerAll(tools);
    } catch (e) {
      this.core.groups = before;
      throw e;
    }
    this.#notifyRegistryChanged();
  }

  /** Registers `tools`, or none of them. */
  #registerAll(tools) {
    const done = [];
    try {
      for (const tool of tools) {
        this.core.register(tool);
        done.push(tool);
      }
    } catch (e) {
      for (const tool of done.reverse()) this.core.unregister(tool.name, tool.scope);
      throw e;
    }
  }

  unregisterTools(names, scope = undefined) {
    for (const name of names) this.core.unregister(name, scope);
    this.#notifyRegistryChanged();
  }

  /** Creates `name` under `parent` and returns its id (`parent/name`). */
  createAgent(name, parent = undefined) {
    const id = parent === undefined ? name : `${parent}/${name}`;
    this.core.createAgent(id, parent);
    for (const plugin of this.plugins) {
      if (this.#attach(plugin, id, parent) === TRAPPED) continue;
    }
    return id;
  }

  /**
   * Creates `name` under `parent` as a fork of `source` (it continues
   * `source`'s conversation) and returns its id. The plugin starts it with
   * what `source` loaded (`agent-forked`); a fresh child starts cold.
   */
  forkAgent(name, parent, source) {
    this.core.requireAgent(source);
    const id = parent === undefined ? name : `${parent}/${name}`;
    this.core.createAgent(id, parent);
    for (const plugin of this.plugins) {
      // A quarantined plugin is never called again.
      if (plugin.quarantined) continue;
      this.#registerGuards(plugin, id);
      const forked = this.#contain(plugin, 'agent-forked', () => plugin.instance.agentForked(id, parent, source));
      if (forked === TRAPPED) continue;
      if (!forked.ok) {
        throw new Error(
          `plugin \`${plugin.id}\` refused fork \`${escape(id)}\`: ${describePluginError(forked.error)}`,
        );
      }
    }
    return id;
  }

  disposeAgent(id) {
    const removed = this.core.disposeAgent(id);
    for (const plugin of this.plugins) {
      for (const agent of removed) {
        if (plugin.quarantined) break;
        this.#contain(plugin, 'agent-disposed', () => plugin.instance.agentDisposed(agent));
      }
    }
  }

  /** Installs a restriction layer on `agent` from `source` (a parent, the profile, a plugin). */
  restrict(agent, source, allow) {
    this.core.restrict(agent, source, allow);
  }

  /** A native pre-execute hook, run before the plugins' hooks. */
  addPreExecuteHook(name, hook) {
    this.hooks.push([name, hook]);
  }

  /**
   * Instantiates and configures a plugin, registers its guard tools in every
   * agent's scope and tells it about every agent, parents first. Throws
   * `ConfigRejected` when the plugin rejects `config`. A plugin that fails
   * to start (a trap, a guard tool's name taken, an agent refused) leaves
   * nothing behind.
   */
  installPlugin(id, component, config) {
    if (this.plugins.some((p) => p.id === id)) {
      throw new Error(`a plugin with id \`${id}\` is already installed`);
    }
    const logs = [];
    const exports = component.instantiate(importObject(this.core, id, logs));
    const instance = new PluginInstance(id, exports, logs, () => component.memoryBytes?.(exports) ?? 0);
    try {
      this.#start(id, component, config, instance);
    } catch (e) {
      // Its thread goes with it.
      instance.release();
      throw e;
    }
  }

  /** Configures `instance`, registers its guard tools and tells it about every agent (installPlugin). */
  #start(id, component, config, instance) {
    const failed = (during, trap) => new Error(`plugin \`${id}\` failed in ${during}: ${failureReason(trap)}`, { cause: trap });
    const starting = (during, fn) => {
      try {
        return fn();
      } catch (e) {
        throw e instanceof PluginTrap ? failed(during, e) : e;
      }
    };
    const configured = starting('configure', () => instance.configure(JSON.stringify(config ?? null)));
    if (!configured.ok) throw new ConfigRejected(id, configured.error);
    const guards = starting('guard-tools', () => instance.guardTools()).map(
      (def) => new Tool(def.name, def.description, def.origin, parseParameters(id, def)),
    );
    this.#checkGuardNames(id, guards);
    const plugin = { id, instance, guards, component, config, quarantined: undefined };
    this.plugins.push(plugin);
    const agents = [...this.core.agents].sort(
      ([a], [b]) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0),
    );
    try {
      for (const [agent, parent] of agents) {
        starting('agent-created', () => this.#attach(plugin, agent, parent, { contain: false }));
      }
    } catch (e) {
      // Nothing of a plugin that did not start stays behind.
      this.plugins.splice(this.plugins.indexOf(plugin), 1);
      this.core.unregisterOwnedBy(id);
      this.core.liftAll(id);
      throw e;
    }
  }

  /** Gives a running plugin a new config. */
  reconfigure(id, config) {
    const plugin = this.#live(id);
    const configured = this.#contain(plugin, 'configure', () => plugin.instance.configure(JSON.stringify(config ?? null)));
    if (configured === TRAPPED) throw this.#disabled(plugin);
    if (!configured.ok) throw new ConfigRejected(id, configured.error);
    plugin.config = config;
  }

  /** Declares lazy groups (`{name, description, toolNames}`) and the loader that loads them. */
  setLazyGroups(decls, loader) {
    for (const decl of decls) this.core.lazyGroups.set(decl.name, { decl, loads: 0 });
    this.core.groupLoader = loader;
    this.#notifyRegistryChanged();
  }

  /** Plugin `id`'s load state (0.3.0 `export-state`). */
  exportState(id) {
    const plugin = this.#live(id);
    const state = this.#contain(plugin, 'export-state', () => plugin.instance.exportState());
    if (state === TRAPPED) throw this.#disabled(plugin);
    // As the Rust harness: a state no shell would restore is not saved, and the plugin stays.
    if (state.ok && Buffer.byteLength(state.value, 'utf8') > MAX_STATE_BYTES) {
      throw new Error(
        `plugin \`${id}\` exported a state of ${Buffer.byteLength(state.value, 'utf8')} bytes, more than the ${MAX_STATE_BYTES} a shell restores: not saved`,
      );
    }
    return unwrap(plugin, state);
  }

  /** Gives plugin `id` a state saved by an earlier run. */
  restoreState(id, state) {
    const plugin = this.#live(id);
    const restored = this.#contain(plugin, 'restore-state', () => plugin.instance.restoreState(state));
    if (restored === TRAPPED) throw this.#disabled(plugin);
    if (!restored.ok) throw new Error(`plugin \`${id}\` cannot restore: ${escape(String(restored.error))}`);
  }

  /**
   * A new run of plugin `id` over the same shell: its state saved, the plugin
   * installed afresh (with `config`, or the one it had), the state restored.
   * A config the new run refuses loses nothing: the plugin runs on as it was,
   * with its state, and the refusal is thrown.
   */
  resumePlugin(id, config = undefined) {
    const state = this.exportState(id);
    const plugin = this.plugin(id);
    const next = config === undefined ? plugin.config : config;
    this.disposePlugin(id);
    try {
      this.installPlugin(id, plugin.component, next);
    } catch (refused) {
      this.installPlugin(id, plugin.component, plugin.config);
      this.restoreState(id, state);
      throw refused;
    }
    this.restoreState(id, state);
  }

  /**
   * Disposes a plugin and removes everything it left: its guard tools and any
   * restriction layer it did not lift itself. A quarantined plugin is not
   * called again.
   */
  disposePlugin(id) {
    const plugin = this.plugin(id);
    this.plugins.splice(this.plugins.indexOf(plugin), 1);
    try {
      if (!plugin.quarantined) plugin.instance.dispose();
    } finally {
      plugin.instance.release();
      this.core.unregisterOwnedBy(id);
      this.core.liftAll(id);
    }
    this.#notifyRegistryChanged();
  }

  /**
   * Lets every plugin instance go, with its thread and its memory, without
   * calling it (their logs stay): the shell is done with them. A plugin
   * called after this fails as if it trapped.
   */
  close() {
    for (const plugin of this.plugins) plugin.instance.release();
  }

  /** Plugin `id`, quarantined or not. */
  plugin(id) {
    const plugin = this.plugins.find((p) => p.id === id);
    if (!plugin) throw new Error(`no plugin \`${id}\` is installed`);
    return plugin;
  }

  /** Why plugin `id` shows, defers or hides `tool` for `agent`. */
  explain(id, agent, tool) {
    return this.explainLocated(id, agent, tool).explanation;
  }

  /**
   * `explain`, with the JSON pointer of the plugin's config entry that
   * decided (`pointer`: undefined when none did).
   */
  explainLocated(id, agent, tool) {
    this.core.requireAgent(agent);
    const plugin = this.#live(id);
    const explained = this.#contain(plugin, 'explain', () => plugin.instance.explainLocated(agent, tool));
    if (explained === TRAPPED) throw this.#disabled(plugin);
    return unwrap(plugin, explained);
  }

  /** What each plugin adds to `agent`'s system prompt: [plugin id, text] pairs. */
  systemPrompt(agent) {
    this.core.requireAgent(agent);
    const texts = [];
    for (const plugin of this.plugins) {
      if (plugin.quarantined) continue;
      const result = this.#contain(plugin, 'system-prompt', () => plugin.instance.systemPrompt(agent));
      if (result === TRAPPED) continue;
      const text = unwrap(plugin, result);
      if (text !== undefined) texts.push([plugin.id, text]);
    }
    return texts;
  }

  /**
   * Prompt assembly: the ordered tools the model receives on `agent`'s next
   * request, and the system-prompt text plugins add (each plugin's text in
   * install order, separated by a blank line).
   */
  assemble(agent) {
    const tools = this.nextRequest(agent);
    const texts = this.systemPrompt(agent).map(([, text]) => text);
    return { tools, systemPrompt: texts.length > 0 ? texts.join('\n\n') : undefined };
  }

  /**
   * The ordered tool schemas the model receives on `agent`'s next request.
   * Each plugin is asked first (it may update its allow set); the result is
   * what the agent may call, filtered by every plugin's view.
   */
  nextRequest(agent) {
    const views = [];
    for (const plugin of this.plugins) {
      if (plugin.quarantined) continue;
      const view = this.#contain(plugin, 'visible-tools', () => plugin.instance.visibleTools(agent));
      if (view !== TRAPPED) views.push(new Set(unwrap(plugin, view)));
    }
    return this.core
      .effective(agent)
      .filter((t) => views.every((view) => view.has(t.name)))
      .map((t) => t.schema());
  }

  /**
   * Calls a tool as the model would: resolve it, run the pre-execute
   * waterfall (native hooks, then plugins; any deny wins), check the agent's
   * restrictions, then run it. Pre-execute runs before the restriction check
   * so that a hook can tell the model why a hidden tool is refused.
   *
   * Returns `{kind: 'denied', by, reason}`, `{kind: 'refused', reason}` or
   * `{kind: 'completed', json, text, isError}`.
   */
  call(agent, envelope, envelopeArgs) {
    try {
      return this.#callChecked(agent, envelope, envelopeArgs);
    } finally {
      // A plugin may have loaded a lazy group in any of its calls (lazy-tools' `load_tools`
      // in execute, a forwarded call's group in resolve-call, a pre-execute hook's): every
      // plugin hears of its tools when the call ends, whatever its outcome, as in the Rust
      // harness's `Shell::call`.
      this.#tellOfLoads();
    }
  }

  #callChecked(agent, envelope, envelopeArgs) {
    // The plugin that owns the tool unwraps a forwarded call first: every
    // hook and check below sees the real tool and arguments.
    let [tool, args, forwarded] = [envelope, envelopeArgs, false];
    const ownerId = this.core.resolve(agent, envelope)?.owner;
    const owning = this.plugins.find((p) => p.id === ownerId && !p.quarantined);
    if (owning) {
      const resolution = this.#contain(owning, 'resolve-call', () =>
        owning.instance.resolveCall(agent, envelope, JSON.stringify(envelopeArgs)),
      );
      this.#tellOfLoads();
      if (resolution === TRAPPED) return this.#failedTool(envelope, owning);
      const resolved = unwrap(owning, resolution);
      if (resolved.tag === 'reject') {
        const r = resolved.val;
        const json = pluginJson(
          r.json,
          `plugin \`${owning.id}\` rejected a call to \`${escape(envelope)}\` (resolve-call) with a result that is not JSON`,
        );
        return { kind: 'completed', json, text: r.text, isError: r.isError };
      }
      if (resolved.tag === 'forward') {
        const notJson = `plugin \`${owning.id}\` forwarded a call to \`${escape(envelope)}\` (resolve-call) with arguments that are not JSON`;
        [tool, args, forwarded] = [resolved.val.tool, pluginJson(resolved.val.arguments, notJson), true];
      }
    }
    if (!this.core.resolve(agent, tool)) return { kind: 'refused', reason: `unknown tool \`${escape(tool)}\`` };
    for (const [name, hook] of this.hooks) {
      const verdict = hook(agent, tool, args);
      if (verdict.tag === 'deny') return { kind: 'denied', by: name, reason: verdict.val };
    }
    const argumentsJson = JSON.stringify(args);
    // As the Rust harness: oversized arguments never reach a plugin's pre-execute.
    const bytes = Buffer.byteLength(argumentsJson);
    if (bytes > MAX_ARGUMENT_BYTES) {
      return {
        kind: 'refused',
        reason: `the arguments of \`${tool}\` are ${bytes} bytes of JSON; at most ${MAX_ARGUMENT_BYTES >> 20} MiB`,
      };
    }
    for (const plugin of this.plugins) {
      if (plugin.quarantined) continue;
      // A trapped plugin's verdict is gone with it; the restriction check
      // below still holds the rest of the chain.
      const verdict = this.#contain(plugin, 'pre-execute', () => plugin.instance.preExecute(agent, tool, argumentsJson));
      if (verdict !== TRAPPED && verdict.tag === 'deny') return { kind: 'denied', by: plugin.id, reason: verdict.val };
    }
    // A quarantined plugin's tools are gone: resolve again.
    const resolved = this.core.resolve(agent, tool);
    if (!resolved) return { kind: 'refused', reason: `unknown tool \`${escape(tool)}\`` };
    if (!this.core.effective(agent).some((t) => t.name === tool)) {
      return {
        kind: 'refused',
        reason: `tool \`${tool}\` is not available to agent \`${agent}\``,
      };
    }
    if (forwarded) {
      const invalid = checkArguments(resolved, args);
      if (invalid) return invalid;
    }
    if (resolved.owner === undefined) return emulatedRun(resolved, args);
    const owner = this.plugins.find((p) => p.id === resolved.owner && !p.quarantined);
    if (!owner) {
      throw new Error(`tool \`${tool}\` belongs to plugin \`${resolved.owner}\`, which is gone`);
    }
    const result = this.#contain(owner, 'execute', () => owner.instance.execute(agent, tool, argumentsJson));
    if (result === TRAPPED) return this.#failedTool(tool, owner);
    if (!result.ok) {
      throw new Error(
        `plugin \`${owner.id}\` refused to run \`${escape(tool)}\`: ${describePluginError(result.error)}`,
      );
    }
    const json = pluginJson(
      result.value.json,
      `plugin \`${owner.id}\` returned a result for \`${escape(tool)}\` (execute) that is not JSON`,
    );
    return { kind: 'completed', json, text: result.value.text, isError: result.value.isError };
  }

  /** A call to `tool` whose plugin trapped running it. */
  #failedTool(tool, plugin) {
    return {
      kind: 'refused',
      reason: `tool \`${tool}\` failed: its plugin \`${plugin.id}\` is disabled (${plugin.quarantined.reason})`,
    };
  }

  /**
   * Registers a plugin's guard tools in `agent`'s scope and tells the plugin
   * about the agent. A trap quarantines the plugin (gives `TRAPPED`), unless
   * `contain` is false: then it is thrown, for a plugin being installed.
   */
  #attach(plugin, agent, parent, { contain = true } = {}) {
    if (plugin.quarantined) return undefined;
    this.#registerGuards(plugin, agent);
    const call = () => plugin.instance.agentCreated(agent, parent);
    const created = contain ? this.#contain(plugin, 'agent-created', call) : call();
    if (created === TRAPPED) return TRAPPED;
    if (!created.ok) {
      throw new Error(
        `plugin \`${plugin.id}\` refused agent \`${agent}\`: ${describePluginError(created.error)}`,
      );
    }
    return undefined;
  }

  /** Registers a plugin's guard tools in `agent`'s own scope. */
  #registerGuards(plugin, agent) {
    for (const guard of plugin.guards) {
      this.core.register(
        new Tool(guard.name, guard.description, ofAgent(agent), guard.parameters, plugin.id),
      );
    }
  }

  /**
   * A plugin's guard tools may not take a name the shell or another plugin
   * already uses (an agent would reach them instead of the real tool, even
   * where its chain denies that tool), nor one name twice.
   */
  #checkGuardNames(id, guards) {
    const seen = new Set();
    for (const guard of guards) {
      if (seen.has(guard.name)) {
        throw new Error(`plugin \`${id}\` declares its tool \`${escape(guard.name)}\` twice`);
      }
      seen.add(guard.name);
      const taken = this.core.named(guard.name)[0];
      if (taken) {
        const by = taken.owner !== undefined ? `a tool of plugin \`${taken.owner}\`` : `a ${originName(taken.origin)} tool`;
        throw new Error(
          `plugin \`${id}\` declares a tool \`${escape(guard.name)}\`, but that name is already ${by}: a plugin cannot take another tool's name`,
        );
      }
    }
  }

  /** Plugin `id`, unless it is quarantined: then why. */
  #live(id) {
    const plugin = this.plugin(id);
    if (plugin.quarantined) throw new Error(String(plugin.quarantined));
    return plugin;
  }

  /** The error a call that just quarantined `plugin` throws. */
  #disabled(plugin) {
    const q = plugin.quarantined;
    return new Error(`plugin \`${plugin.id}\` failed in ${q.during} and is disabled: ${q.reason}`);
  }

  /** Runs `fn`, a call into `plugin`: a trap quarantines the plugin and gives `TRAPPED`. */
  #contain(plugin, during, fn) {
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof PluginTrap)) throw e;
      this.#quarantine(plugin, during, e);
      return TRAPPED;
    }
  }

  /**
   * Stops calling `plugin` after it trapped in `during`, as the Rust
   * harness's `Shell::quarantine`: lifts every layer it installed and
   * removes its tools, so every agent gets what the rest of its chain
   * authorizes (a plugin only ever hides, so dropping it cannot widen past
   * that), and tells the other plugins (a trap there quarantines that one
   * too, once each).
   */
  #quarantine(plugin, during, trap) {
    if (plugin.quarantined) return;
    plugin.quarantined = new Quarantine(plugin.id, during, failureReason(trap));
    // Never called again: its memory goes (its log stays).
    plugin.instance.release();
    pushLog(plugin.instance.logs, 'error', String(plugin.quarantined));
    this.core.unregisterOwnedBy(plugin.id);
    this.core.liftAll(plugin.id);
    // A plugin's error value can only be logged here.
    this.#notifyRegistryChangedLogging();
  }

  /**
   * Tells every live plugin the registry changed. A plugin that answers with
   * an error value does not keep the ones after it from hearing: the change
   * is in force, and the refusals are thrown once every plugin was told (the
   * Rust harness's `RegistryChangeErrors`).
   */
  #notifyRegistryChanged() {
    // What lazy loads registered so far is told with the rest: no second notice for it.
    this.core.loadedOutside = false;
    const refusals = [];
    for (const plugin of this.plugins) {
      if (plugin.quarantined) continue;
      const changed = this.#contain(plugin, 'registry-changed', () => plugin.instance.registryChanged());
      if (changed !== TRAPPED && !changed.ok) refusals.push([plugin.id, describePluginError(changed.error)]);
    }
    if (refusals.length > 0) {
      const each = refusals.map(([id, error]) => `plugin \`${escape(id)}\` could not take it in (registry-changed): ${error}`);
      throw Object.assign(new Error(`the registry change is in force and every plugin was told of it, but ${each.join('; ')}`), {
        refusedBy: refusals.map(([id]) => id),
      });
    }
  }

  /**
   * Tells every plugin of the tools a lazy load registered during a plugin's call, if one did.
   * A refusal is logged: the call's own result must not be lost for a change that was applied
   * (the Rust harness's `logging_refusals`).
   */
  #tellOfLoads() {
    if (!this.core.loadedOutside) return;
    this.core.loadedOutside = false;
    this.#notifyRegistryChangedLogging();
  }

  /** `#notifyRegistryChanged`, with the refusals in each refusing plugin's log instead of thrown. */
  #notifyRegistryChangedLogging() {
    try {
      this.#notifyRegistryChanged();
    } catch (e) {
      if (!e.refusedBy) throw e;
      for (const id of e.refusedBy) pushLog(this.plugin(id).instance.logs, 'warn', e.message);
    }
  }
}

/**
 * `text`, JSON a plugin returned, parsed; else `message` (which plugin, which call) is thrown.
 * V8's own message is left out: it quotes the plugin's text, controls and all.
 */
function pluginJson(text, message) {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(message);
  }
}

/** A guard tool's parameters, parsed; the plugin's origin is ignored (the host decides). */
function parseParameters(plugin, def) {
  return pluginJson(
    def.parameters,
    `the plugin \`${plugin}\`'s tool \`${escape(def.name)}\` (guard-tools) has parameters that are not JSON`,
  );
}

/**
 * A forwarded call's arguments against the tool's JSON Schema: the subset
 * the fixtures' tools use (type, required, properties, additionalProperties,
 * enum, items). A mismatch is an error result with the whole schema.
 */
/** The most problems one error result lists (the Rust harness's `MAX_PROBLEMS`). */
const MAX_PROBLEMS = 20;

function checkArguments(tool, args) {
  const problems = [];
  schemaProblems(tool.parameters, args, '', problems);
  if (problems.length === 0) return undefined;
  const schema = { name: tool.name, description: tool.description, parameters: tool.parameters };
  const text =
    `The arguments of "${tool.name}" do not match its schema:\n` +
    problems.map((p) => `- ${p}\n`).join('') +
    `Its schema: ${JSON.stringify(schema)}\nCall it again with arguments that match.`;
  return {
    kind: 'completed',
    json: { error: 'invalid arguments', tool: tool.name, problems, schema },
    text,
    isError: true,
  };
}

const typeOf = (v) =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;

/** Adds to `out` why `value` does not match `schema`, up to MAX_PROBLEMS: the check stops there. */
function schemaProblems(schema, value, at, out) {
  if (schema === null || typeof schema !== 'object' || out.length >= MAX_PROBLEMS) return;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = typeOf(value);
    const ok = types.some((t) => t === actual || (t === 'number' && actual === 'integer'));
    if (!ok) {
      problem(out, `${where(at)}${JSON.stringify(value)} is not of type ${types.map((t) => `"${t}"`).join(', ')}`);
      return;
    }
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    problem(out, `${where(at)}${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeOf(value) === 'object') {
    // Own keys only: `toString` is no property of the arguments nor of the schema.
    for (const key of schema.required ?? []) {
      if (!Object.hasOwn(value, key)) problem(out, `${where(at)}"${key}" is a required property`);
    }
    const props = schema.properties ?? {};
    for (const [key, v] of Object.entries(value)) {
      if (Object.hasOwn(props, key)) schemaProblems(props[key], v, `${at}/${key}`, out);
      else if (schema.additionalProperties === false) {
        problem(out, `${where(at)}additional property "${key}" is not allowed`);
      }
      if (out.length >= MAX_PROBLEMS) return;
    }
  }
  if (typeOf(value) === 'array' && schema.items) {
    for (let i = 0; i < value.length && out.length < MAX_PROBLEMS; i++) schemaProblems(schema.items, value[i], `${at}/${i}`, out);
  }
}

const problem = (out, text) => {
  if (out.length < MAX_PROBLEMS) out.push(text);
};

/** A problem's place, as the Rust harness writes it: none for the arguments as a whole. */
const where = (at) => (at === '' ? '' : `${at}: `);

/** The shell does not run MCP servers or built-ins: a call that passes every check is recorded. */
function emulatedRun(tool, args) {
  return {
    kind: 'completed',
    json: { emulated: true, tool: tool.name, arguments: args },
    text: `(js host) ${tool.name} ran with ${JSON.stringify(args)}`,
    isError: false,
  };
}

/** The most texts of one kind a tool's `x-lazy-tools` holds, and the longest (catalog.rs). */
export const MAX_SEARCH_TEXTS = 32;
export const MAX_SEARCH_TEXT_CHARS = 500;
/** The longest tool name the plugin's guard tools take back; a longer one is cut. */
export const MAX_SHELL_NAME_CHARS = 256;

/** `name` with every character but letters, digits, `_` and `-` made `-`. */
const clean = (name) => name.replace(/[^A-Za-z0-9_-]/gu, '-');

/** The name the shell gives tool `tool` of MCP server `server`, as the Rust harness does. */
export function shellName(server, tool) {
  const whole = `${clean(server)}__${clean(tool)}`;
  if (whole.length <= MAX_SHELL_NAME_CHARS) return whole;
  const hash = `-${createHash('sha256').update(whole).digest('hex').slice(0, 16)}`;
  return whole.slice(0, MAX_SHELL_NAME_CHARS - hash.length) + hash;
}

// Keys the shell does not read but MCP (2025-11-25) or the catalog format defines, and
// extensions (`x-`), pass. Another key a source's own catalog may carry (`method`) passes too,
// unless it looks like a misspelt key the shell reads (`descripton`, `input_schema`): that
// would lose text without a word, as the Rust harness also refuses.
const READ_KEYS = {
  catalog: ['servers'],
  server: ['name', 'description', 'category', 'tools'],
  tool: ['name', 'description', 'inputSchema', 'x-lazy-tools'],
};
const UNREAD_KEYS = {
  catalog: ['source'],
  server: ['package', 'version', 'title', '_meta'],
  tool: ['title', 'outputSchema', 'annotations', 'icons', 'execution', '_meta'],
};

/**
 * Edits from `a` to `b` (a letter added, lost or changed, or two side by side swapped; optimal
 * string alignment, over Unicode scalar values), as the Rust harness counts them (strsim).
 */
function osaDistance(a, b) {
  const x = [...a];
  const y = [...b];
  // d[i][j]: edits from the first i of x to the first j of y.
  const d = Array.from({ length: x.length + 1 }, (_, i) => [i, ...y.map((_, j) => (i === 0 ? j + 1 : 0))]);
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const change = x[i - 1] === y[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + change);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[x.length][y.length];
}

/**
 * Whether `key` is at most one edit from `read`, a key the shell reads (short, ASCII). One edit
 * changes the length by at most one character, so a key longer or shorter than that is not
 * measured: the distance's table is as large as the two lengths' product (a key of 5 MB made
 * it 2.4 GB).
 */
function oneEditAway(read, key) {
  // A character is one or two UTF-16 units: a quick bound first, then the exact one.
  if (Math.abs(key.length - read.length) > 2) return false;
  const chars = [...key].length;
  return Math.abs(chars - [...read].length) <= 1 && osaDistance(read, key) <= 1;
}

/** What a JSON value is, in words. */
function jsonKind(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return { object: 'an object', string: 'a string', number: 'a number', boolean: 'a boolean' }[typeof value] ?? typeof value;
}

/** Throws unless `value` is a JSON object: JSON read by position is not what its author meant. */
function mustBeObject(value, noun, place) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${place || '/'}: ${noun} is a JSON object with named keys; this is ${jsonKind(value)}`);
  }
}

/** Throws unless `value` is a list (or missing, where a default applies). */
function mustBeList(value, place) {
  if (value !== undefined && !Array.isArray(value)) {
    throw new Error(`${place}: a list, [...]; this is ${jsonKind(value)}`);
  }
}

/** Throws unless `value` is a string (or missing, when `optional`): `what` is said of it. */
function mustBeString(value, place, what, optional = false) {
  if (typeof value === 'string' || (optional && value === undefined)) return;
  throw new Error(`${place}: ${what} is a string; this is ${jsonKind(value)}`);
}

/** The most characters a misspelt key may have past the key it is near (catalog.rs). */
const MAX_SEPARATORS = 3;

function checkKeys(object, what, place) {
  mustBeObject(object, what === 'catalog' ? 'the catalog' : `a ${what}`, place);
  const plain = (k) => k.replace(/[_-]/gu, '').toLowerCase();
  for (const key of Object.keys(object)) {
    if (READ_KEYS[what].includes(key) || UNREAD_KEYS[what].includes(key) || key.startsWith('x-')) continue;
    const plainKey = plain(key);
    const near = READ_KEYS[what].find(
      // As the Rust harness: one edit away once case, `_` and `-` are set aside, and not much
      // longer than the key it is near (`___description` padded to a megabyte is not quoted).
      (read) => [...key].length <= read.length + MAX_SEPARATORS && oneEditAway(plain(read), plainKey),
    );
    if (near === undefined) continue;
    const pointer = `${place}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    const read = READ_KEYS[what].map((k) => `\`${k}\``).join(', ');
    const noun = what === 'catalog' ? 'the catalog' : `a ${what}`;
    throw new Error(
      `${pointer}: unknown key \`${key}\` in ${noun}: did you mean \`${near}\`? The shell reads ${read}; an extension's key starts with \`x-\``,
    );
  }
}

function schemaKind(schema) {
  if (schema === null) return 'null';
  if (Array.isArray(schema)) return 'an array';
  if (typeof schema === 'object') {
    return 'type' in schema ? `a schema of type ${JSON.stringify(schema.type)}` : 'an object schema without a "type"';
  }
  return { string: 'a string', number: 'a number', boolean: 'a boolean' }[typeof schema] ?? typeof schema;
}

/**
 * A catalog's tools as MCP tools named `<server>__<tool>` (unsafe characters become `-`; a name
 * an earlier tool took gets `-2`, `-3`, ...), as the Rust harness names them. As there, these
 * are errors at the entry's place: a server that lists a tool twice, a tool without a name or an
 * object schema, a server without a name, two tools with one id (`server/tool`), a server whose
 * tools begin as another's (`a__`, `a__b__`), a server without its `tools` list, and a key that
 * looks misspelt.
 */
export function catalogTools(catalog) {
  try {
    return readCatalog(catalog);
  } catch (e) {
    // A name or key from the catalog is shown, never obeyed: a server named
    // with an escape sequence must not rewrite the user's terminal.
    e.message = escape(e.message);
    throw e;
  }
}

/** The most tools a catalog holds, as in the Rust harness (`MAX_CATALOG_TOOLS`): what lazy-tools indexes in its 256 MiB. */
export const MAX_CATALOG_TOOLS = 50_000;

function readCatalog(catalog) {
  checkKeys(catalog, 'catalog', '');
  if (catalog.servers === undefined) throw new Error('/servers: missing; a catalog lists its servers there');
  mustBeList(catalog.servers, '/servers');
  const count = catalog.servers.reduce((n, server) => n + (Array.isArray(server?.tools) ? server.tools.length : 0), 0);
  if (count > MAX_CATALOG_TOOLS) {
    throw new Error(
      `/servers: ${count} tools; a catalog here holds at most ${MAX_CATALOG_TOOLS} (a plugin such as lazy-tools ` +
        'indexes every tool it may show, within its 256 MiB of memory)',
    );
  }
  const first = new Map();
  const ids = new Map();
  const prefixes = new Map();
  const taken = new Set();
  // Per stem a suffix is written after (the plain name, cut to leave room for the suffix when
  // it is long) and the suffix's width, the suffix to try next: every one of that width below
  // it is taken, so many names that clean alike, or share a cut stem, cost one try each.
  const nextSuffix = new Map();
  const unique = (plain) => {
    if (!taken.has(plain)) {
      taken.add(plain);
      return plain;
    }
    let next = 2;
    for (;;) {
      const width = `-${next}`.length;
      const stem = plain.slice(0, MAX_SHELL_NAME_CHARS - width);
      // Per stem and suffix width; the smallest suffix of a width is 2, then 10, 100, ...
      const key = `${width}:${stem}`;
      const firstFree = nextSuffix.get(key) ?? (width === 2 ? 2 : 10 ** (width - 2));
      if (firstFree > next) {
        next = firstFree;
        if (`-${next}`.length !== width) continue;
      }
      nextSuffix.set(key, next + 1);
      const name = `${stem}-${next}`;
      next += 1;
      if (!taken.has(name)) {
        taken.add(name);
        return name;
      }
    }
  };
  const tools = catalog.servers.flatMap((server, s) => {
    checkKeys(server, 'server', `/servers/${s}`);
    if (server.tools === undefined) {
      throw new Error(`/servers/${s}/tools: missing; a server lists its tools there (\`[]\` for none)`);
    }
    mustBeList(server.tools, `/servers/${s}/tools`);
    mustBeString(server.name, `/servers/${s}/name`, "a server's name", true);
    if (!server.name) throw new Error(`/servers/${s}/name: a server has an empty name`);
    mustBeString(server.description, `/servers/${s}/description`, `the description of server \`${server.name}\``, true);
    if (server.category !== null) {
      mustBeString(server.category, `/servers/${s}/category`, `the category of server \`${server.name}\``, true);
    }
    const prefix = `${clean(server.name)}__`;
    if (!prefixes.has(prefix)) prefixes.set(prefix, s);
    return server.tools.map((tool, t) => {
      const place = `/servers/${s}/tools/${t}`;
      checkKeys(tool, 'tool', place);
      mustBeString(tool.name, `${place}/name`, `the name of a tool of server \`${server.name}\``, true);
      if (!tool.name) throw new Error(`${place}: a tool of server \`${server.name}\` has an empty name`);
      const of = `tool \`${tool.name}\` of server \`${server.name}\``;
      mustBeString(tool.description, `${place}/description`, `the description of ${of}`, true);
      // `null` is no parameters, as a missing schema is; a schema without `type` is taken.
      const schema = tool.inputSchema ?? { type: 'object', properties: {} };
      if (typeof schema !== 'object' || Array.isArray(schema) || ('type' in schema && schema.type !== 'object')) {
        throw new Error(
          `${place}/inputSchema: tool \`${tool.name}\` of server \`${server.name}\` takes ${schemaKind(schema)}; an MCP tool's inputSchema is a JSON Schema object with "type": "object"`,
        );
      }
      const pair = JSON.stringify([server.name, tool.name]);
      if (first.has(pair)) {
        throw new Error(
          `${place}: tool \`${tool.name}\` of server \`${server.name}\` is listed twice (first at ${first.get(pair)})`,
        );
      }
      first.set(pair, place);
      const id = `${server.name}/${tool.name}`;
      const other = ids.get(id);
      if (other !== undefined) {
        throw new Error(
          `${place}: tool \`${tool.name}\` of server \`${server.name}\` and tool \`${other.tool}\` of server \`${other.server}\` (at ${other.place}) have one id, \`${id}\`: a server or tool name holding \`/\` makes \`server/tool\` split two ways`,
        );
      }
      ids.set(id, { server: server.name, tool: tool.name, place });
      const registered = new Tool(
        unique(shellName(server.name, tool.name)),
        tool.description ?? '',
        { tag: 'mcp', val: server.name },
        schema,
      );
      const extra = tool['x-lazy-tools'];
      if (extra !== undefined && extra !== null) {
        mustBeObject(extra, 'the search text', `${place}/x-lazy-tools`);
        const known = ['keywords', 'examples', 'descriptions'];
        for (const key of Object.keys(extra)) {
          if (!known.includes(key)) {
            throw new Error(
              `${place}/x-lazy-tools/${key}: unknown key \`${key}\`; it holds ${known.map((k) => `\`${k}\``).join(', ')}`,
            );
          }
        }
        const texts = (key) => {
          const list = extra[key];
          if (list === undefined) return [];
          mustBeList(list, `${place}/x-lazy-tools/${key}`);
          const one = { keywords: 'a keyword', examples: 'an example', descriptions: 'a description' }[key];
          list.forEach((text, i) => mustBeString(text, `${place}/x-lazy-tools/${key}/${i}`, `${one} of ${of}`));
          // What lazy-tools reads of them, as the Rust harness bounds them (catalog.rs).
          if (list.length > MAX_SEARCH_TEXTS) {
            throw new Error(
              `${place}/x-lazy-tools/${key}: ${list.length} texts; a tool's \`${key}\` holds at most ${MAX_SEARCH_TEXTS}`,
            );
          }
          list.forEach((text, i) => {
            const chars = [...text].length;
            if (chars > MAX_SEARCH_TEXT_CHARS) {
              throw new Error(
                `${place}/x-lazy-tools/${key}/${i}: ${chars} characters; a text here holds at most ${MAX_SEARCH_TEXT_CHARS}`,
              );
            }
          });
          return list;
        };
        registered.searchText = {
          keywords: texts('keywords'),
          examples: texts('examples'),
          descriptions: texts('descriptions'),
        };
      }
      return registered;
    });
  });
  // A prefix that begins another comes right before one that it begins, in sorted order.
  const sorted = [...prefixes.keys()].sort();
  for (let i = 1; i < sorted.length; i++) {
    const [shorter, longer] = [sorted[i - 1], sorted[i]];
    if (longer.startsWith(shorter)) {
      const [a, b] = [prefixes.get(shorter), prefixes.get(longer)];
      throw new Error(
        `/servers/${b}/name: server \`${catalog.servers[b].name}\` names its tools \`${longer}<tool>\`, which begin as server \`${catalog.servers[a].name}\`'s (/servers/${a}) do: a pattern such as \`Defer(${shorter}*)\` would reach both`,
      );
    }
  }
  return tools;
}
