// The shell's state: the tool registry, the agent tree and the restriction
// layers, with the rules that combine them.
//
// Every agent sees its own scope, its ancestors' scopes and the global scope.
// A restriction layer on an agent masks what that agent inherits, never its
// own scope; layers intersect along the chain, so an agent never sees what
// its parent cannot.

import { performance } from 'node:perf_hooks';

import { INVISIBLE, escape, json } from './terminal.js';
import { scopeName } from './tools.js';

export class ShellError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ShellError';
  }
}

const AGENT_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * The deepest agent chain (`main` is 1, `main/worker` 2), and the longest
 * agent id in bytes, as in the Rust harness: a chain this deep is a runaway
 * spawn loop or a hostile id, and every request of an agent walks its chain.
 */
export const MAX_AGENT_DEPTH = 64;
export const MAX_AGENT_ID_BYTES = 1024;

/** The start of a refused id, escaped: the message names it without carrying all of it. */
function shortened(id) {
  const chars = [...id];
  return chars.length > 40 ? `${escape(chars.slice(0, 40).join(''))}…` : escape(id);
}

/** Throws unless `id` is within `MAX_AGENT_DEPTH` and `MAX_AGENT_ID_BYTES`. */
export function checkAgentId(id) {
  const depth = id.split('/').length;
  if (depth > MAX_AGENT_DEPTH) {
    throw new ShellError(
      `agent \`${shortened(id)}\` is ${depth} agents deep; a chain holds at most ${MAX_AGENT_DEPTH} (\`main\` is 1)`,
    );
  }
  const bytes = Buffer.byteLength(id);
  if (bytes > MAX_AGENT_ID_BYTES) {
    throw new ShellError(`agent id \`${shortened(id)}\` is ${bytes} bytes long; an id holds at most ${MAX_AGENT_ID_BYTES}`);
  }
}

export class ShellCore {
  /** @type {import('./tools.js').Tool[]} in registration order */
  tools = [];
  /**
   * name -> the tools of that name, in registration order (one per scope): registering a tool
   * looks its name up here, not through every tool (a plugin of thousands of guard tools, or a
   * catalog of 50,000, made each registration a walk of the registry).
   */
  #byName = new Map();
  /** MCP servers (and other groups) by name, with their descriptions. */
  groups = new Map();
  /** Lazy groups by name: `{decl: {name, description, toolNames}, loads}`. */
  lazyGroups = new Map();
  /** Loads a lazy group: `(name) => Tool[]`, throwing why it could not. */
  groupLoader = undefined;
  /** How long the group loader has run in all, in ms (plugin-thread.js leaves it out of a call's whole-time bound). */
  loaderMs = 0;
  /** Set when a plugin's `load-group` registered tools, for the shell to tell every plugin. */
  loadedOutside = false;
  /** A function from text to a token count, when the shell counts tokens. */
  tokenCounter = undefined;
  /**
   * Whether plugins get the registry as one table (WIT 0.3.0 `registry-table`)
   * rather than `none` (they then read the `registry` list). Off: through jco
   * a call into the plugin per string is cheap, so a table saves nothing, and
   * joining the texts and counting their UTF-8 bytes makes a whole fetch of
   * 10,000 tools about 10 ms slower (`bench/speed.js` prints both ways).
   */
  registryTables = false;
  /** Bumped on every change to what some agent may call (`host.tools-generation`). */
  generation = 0n;
  /** The generation at which a global tool was last registered or removed. */
  toolsChangedAt = 0n;
  /** agent id -> the generation at which it was created, or a restriction on it or a tool of its scope changed */
  restrictedAt = new Map();
  /** agent id -> source -> the generation at which that exposure layer on it changed */
  exposedAt = new Map();
  /** agent id -> parent id (or undefined) */
  agents = new Map();
  /** agent id -> source -> Set of allowed names */
  restrictions = new Map();
  /** agent id -> source -> Set of exposed names (not inherited, WIT 0.3.0 `host.expose`) */
  exposures = new Map();

  /**
   * Whether `agent` may load lazy group `name` (WIT 0.3.0 `host.load-group`,
   * `host.may-load-group`): the restrictions along its chain, but `plugin`'s
   * own layer on it, allow one of the tools the group declares or (once
   * loaded) registered. Exposure layers are left out: they are what a model
   * sees, which their plugins keep once the tools are registered. An unknown
   * group is not judged here: loading it fails.
   */
  mayLoadGroup(agent, plugin, name) {
    const chain = this.chain(agent);
    const group = this.lazyGroups.get(name);
    if (!group) return true;
    const layers = [];
    for (const scope of chain) {
      for (const [source, allow] of this.restrictions.get(scope) ?? []) {
        if (!(scope === agent && source === plugin)) layers.push(allow);
      }
    }
    // Nothing to judge by: a restriction lists registered names only, so it
    // denies whatever the group will register; a chain without one allows it.
    const names = [...group.decl.toolNames, ...(group.loaded ?? [])];
    if (names.length === 0) return layers.length === 0;
    return names.some((tool) => layers.every((allow) => allow.has(tool)));
  }

  /** Registers what lazy group `name` loads; counts the load. Returns the tools. */
  loadGroup(name) {
    const group = this.lazyGroups.get(name);
    if (!group) throw new Error(`the shell has no lazy group \`${escape(name)}\``);
    group.loads += 1;
    if (!this.groupLoader) throw new Error(`the shell cannot load group \`${escape(name)}\`: it has no loader`);
    // The loader's own time (a server may start) is not bounded by the plugin call's.
    const started = performance.now();
    let tools;
    try {
      tools = this.groupLoader(name);
    } finally {
      this.loaderMs += performance.now() - started;
    }
    for (const tool of tools) {
      // As the Rust harness: a tool already registered in that scope (from a
      // cached listing, say) is kept as it is, and the load goes on.
      if (this.named(tool.name).some((t) => t.scope === tool.scope)) continue;
      try {
        this.register(tool);
      } catch (e) {
        e.message = `group \`${escape(name)}\`: ${e.message}`;
        throw e;
      }
      this.loadedOutside = true;
    }
    // Once loaded, a group is judged by the tools it has too (`mayLoadGroup`).
    group.loaded = new Set([...(group.loaded ?? []), ...tools.map((t) => t.name)]);
    return tools;
  }

  setGroup(name, description) {
    this.groups.set(name, description);
  }

  register(tool) {
    // A model writes a tool's name back to call it, and the plugin's guard tools take it back:
    // 1 to 256 characters without whitespace, control characters, bidirectional controls or
    // invisible characters.
    // Punctuation stays.
    const bidi = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
    if (typeof tool.name !== 'string') {
      throw new ShellError(`invalid tool name ${escape(String(tool.name))}: a tool's name is a string, not a ${typeof tool.name}`);
    }
    if (typeof tool.description !== 'string') {
      throw new ShellError(`tool \`${escape(tool.name)}\`: its description is a string, not a ${typeof tool.description}`);
    }
    if (!tool.name.isWellFormed()) {
      throw new ShellError(
        `invalid tool name ${json(tool.name)}: it holds half of a character (a lone UTF-16 surrogate), which UTF-8 cannot carry to a plugin`,
      );
    }
    const unprintable = /[\s\p{Cc}]/u.test(tool.name) || bidi.test(tool.name) || INVISIBLE.test(tool.name);
    if (tool.name.length === 0 || [...tool.name].length > 256 || unprintable) {
      throw new ShellError(
        `invalid tool name ${json(tool.name)}: a tool's name is 1 to 256 characters without whitespace, control characters, bidirectional controls or invisible characters`,
      );
    }
    if (tool.scope !== undefined) this.requireAgent(tool.scope);
    // A name has one owner (the shell, or one plugin) in every scope: a
    // plugin's guard tool could otherwise stand in for a tool the agent's
    // chain denies, since no restriction masks an agent's own scope.
    const taken = this.named(tool.name).find((t) => t.owner !== tool.owner);
    if (taken) {
      const by =
        taken.owner !== undefined ? `plugin \`${taken.owner}\`` : `a ${originName(taken.origin)} tool`;
      throw new ShellError(
        `the name \`${tool.name}\` is taken by ${by}: a tool cannot take another's name`,
      );
    }
    if (this.named(tool.name).some((t) => t.scope === tool.scope)) {
      throw new ShellError(
        `a tool named \`${tool.name}\` is already registered in ${scopeName(tool.scope)}`,
      );
    }
    this.tools.push(tool);
    const same = this.#byName.get(tool.name);
    if (same) same.push(tool);
    else this.#byName.set(tool.name, [tool]);
    this.#toolsChanged(tool.scope);
  }

  /** The tools registered under `name`, in registration order (one per scope). */
  named(name) {
    return this.#byName.get(name) ?? [];
  }

  /** Keeps only the tools `keep` says to keep, in the registry and its index. */
  #keep(keep) {
    this.tools = this.tools.filter(keep);
    for (const [name, same] of this.#byName) {
      const kept = same.filter(keep);
      if (kept.length === 0) this.#byName.delete(name);
      else if (kept.length !== same.length) this.#byName.set(name, kept);
    }
  }

  /** Removes the tool `name` from `scope` (undefined: the global scope). */
  unregister(name, scope = undefined) {
    const tool = this.named(name).find((t) => t.scope === scope);
    if (!tool) {
      throw new ShellError(`no tool named \`${escape(name)}\` is registered in ${scopeName(scope)}`);
    }
    this.#toolsChanged(scope);
    this.tools.splice(this.tools.indexOf(tool), 1);
    const same = this.#byName.get(name).filter((t) => t !== tool);
    if (same.length === 0) this.#byName.delete(name);
    else this.#byName.set(name, same);
    return tool;
  }

  /** Removes every tool a plugin owns; returns how many. */
  unregisterOwnedBy(owner) {
    const before = this.tools.length;
    this.#keep((t) => t.owner !== owner);
    this.#toolsChanged();
    return before - this.tools.length;
  }

  createAgent(id, parent = undefined) {
    checkAgentId(id);
    // An id is its parent's id and one name more: `main/a/b` made under
    // `main` would be a child of an agent that does not exist, and escape
    // what `main/a`'s restrictions allow.
    const cut = id.lastIndexOf('/');
    const [above, name] = cut < 0 ? [undefined, id] : [id.slice(0, cut), id.slice(cut + 1)];
    if (!AGENT_NAME.test(name) || above !== parent) {
      throw new ShellError(`invalid agent name \`${escape(id)}\`: use letters, digits, \`-\` and \`_\``);
    }
    if (this.agents.has(id)) throw new ShellError(`agent \`${id}\` already exists`);
    if (parent !== undefined) this.requireAgent(parent);
    this.generation += 1n;
    this.agents.set(id, parent);
    this.restrictedAt.set(id, this.generation);
  }

  /**
   * Removes an agent with its descendants, their scopes and restrictions.
   * Returns the removed agents, deepest first.
   */
  disposeAgent(id) {
    this.requireAgent(id);
    const removed = [...this.agents.keys()].filter((a) => this.chain(a).includes(id));
    removed.sort((a, b) => this.chain(b).length - this.chain(a).length);
    for (const agent of removed) {
      this.agents.delete(agent);
      this.restrictions.delete(agent);
      this.exposures.delete(agent);
      this.restrictedAt.delete(agent);
      this.exposedAt.delete(agent);
      // Its own-scope tools reached only its subtree, which goes too.
      this.#keep((t) => t.scope !== agent);
      this.generation += 1n;
    }
    return removed;
  }

  hasAgent(id) {
    return this.agents.has(id);
  }

  requireAgent(id) {
    if (!this.agents.has(id)) throw new ShellError(`unknown agent \`${escape(id)}\``);
  }

  /** The agents from the root down to `id`. */
  chain(id) {
    this.requireAgent(id);
    const chain = [];
    for (let at = id; at !== undefined && this.agents.has(at); at = this.agents.get(at)) {
      chain.push(at);
    }
    return chain.reverse();
  }

  /** Installs (an array) or lifts (null/undefined) the layer `source` on `agent`. */
  restrict(agent, source, allow) {
    this.#installLayer(this.restrictions, agent, source, allow);
    this.restrictedAt.set(agent, this.generation);
  }

  /**
   * Installs (an array) or lifts (null/undefined) the exposure layer of
   * `source` on `agent`: like a restriction on `agent`, but not inherited.
   */
  expose(agent, source, visible) {
    this.#installLayer(this.exposures, agent, source, visible);
    if (!this.exposedAt.has(agent)) this.exposedAt.set(agent, new Map());
    this.exposedAt.get(agent).set(source, this.generation);
  }

  #installLayer(layers, agent, source, allow) {
    this.requireAgent(agent);
    if (allow === null || allow === undefined) {
      layers.get(agent)?.delete(source);
      this.generation += 1n;
      return;
    }
    const unknown = allow.filter((name) => !this.#byName.has(name));
    if (unknown.length > 0) {
      const names = unknown.map((n) => `\`${escape(n)}\``).join(', ');
      throw new ShellError(`cannot restrict \`${agent}\`: unknown tool ${names}`);
    }
    if (!layers.has(agent)) layers.set(agent, new Map());
    layers.get(agent).set(source, new Set(allow));
    this.generation += 1n;
  }

  /** Lifts every layer `source` installed, on every agent. */
  liftAll(source) {
    for (const layers of this.restrictions.values()) layers.delete(source);
    for (const layers of this.exposures.values()) layers.delete(source);
    // Every agent may have had one: as if every tool changed.
    this.#toolsChanged();
  }

  /** A global tool reaches every agent; an agent's own-scope tool, its subtree. */
  #toolsChanged(scope = undefined) {
    this.generation += 1n;
    if (scope !== undefined && this.agents.has(scope)) this.restrictedAt.set(scope, this.generation);
    else this.toolsChangedAt = this.generation;
  }

  /**
   * `host.agent-generation`: changes whenever what `agent` may call, as
   * `effective(agent, plugin)` answers it, can have changed; not for
   * `plugin`'s own exposure layer nor for changes reaching only other agents.
   */
  agentGeneration(agent, plugin) {
    if (!this.agents.has(agent)) return this.generation;
    let latest = this.toolsChangedAt;
    for (const [source, at] of this.exposedAt.get(agent) ?? []) {
      if (source !== plugin && at > latest) latest = at;
    }
    for (const scope of this.chain(agent)) {
      const at = this.restrictedAt.get(scope) ?? 0n;
      if (at > latest) latest = at;
    }
    return latest;
  }

  restriction(agent, source) {
    return this.restrictions.get(agent)?.get(source);
  }

  exposure(agent, source) {
    return this.exposures.get(agent)?.get(source);
  }

  /**
   * The tools `agent` may see and call, in prompt order: global tools in
   * registration order, then each scope from the root down. Restrictions
   * apply along the chain; exposure layers only on `agent` itself. `ignore`
   * names one source whose layers on `agent` itself are left out (a plugin
   * asking what the agent could have without its own allow set and exposure).
   */
  effective(agent, ignore = undefined) {
    const chain = this.chain(agent);
    // A Map keeps insertion order; delete-then-set moves a name to the end.
    const visible = new Map();
    for (const tool of this.tools) {
      if (tool.scope === undefined) visible.set(tool.name, tool);
    }
    for (const scope of chain) {
      const layers = [...(this.restrictions.get(scope) ?? [])];
      // Exposure layers apply to the agent itself only, never inherited.
      if (scope === agent) layers.push(...(this.exposures.get(scope) ?? []));
      for (const [source, allow] of layers) {
        if (scope === agent && source === ignore) continue;
        for (const name of visible.keys()) {
          if (!allow.has(name)) visible.delete(name);
        }
      }
      for (const tool of this.tools) {
        if (tool.scope !== scope) continue;
        // A nearer scope shadows a farther tool of the same name.
        visible.delete(tool.name);
        visible.set(tool.name, tool);
      }
    }
    return [...visible.values()];
  }

  /**
   * The tool `agent` would reach under `name`, ignoring restrictions: its own
   * scope first, then its ancestors', then the global scope.
   */
  resolve(agent, name) {
    const chain = this.chain(agent);
    for (const scope of chain.reverse()) {
      const tool = this.named(name).find((t) => t.scope === scope);
      if (tool) return tool;
    }
    return this.named(name).find((t) => t.scope === undefined);
  }
}

/** A tool's origin for messages (`built-in`, MCP server `x`, agent `y`). */
export function originName(origin) {
  switch (origin.tag) {
    case 'builtin':
      return 'built-in';
    case 'mcp':
      return `MCP server \`${escape(origin.val)}\``;
    default:
      return `agent \`${origin.val}\``;
  }
}
