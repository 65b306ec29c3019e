// Tools as the shell holds them, and what the model receives.

import { escape } from './terminal.js';

/** A tool's origin: `{tag: 'builtin'}`, `{tag: 'mcp', val: server}` or `{tag: 'agent', val: agentId}`. */
export const builtin = () => ({ tag: 'builtin' });
export const mcp = (server) => ({ tag: 'mcp', val: server });
export const ofAgent = (agent) => ({ tag: 'agent', val: agent });

/** The agent whose own scope holds a tool of this origin; `undefined` for the global scope. */
export function scopeOf(origin) {
  return origin.tag === 'agent' ? origin.val : undefined;
}

const EMPTY_SCHEMA = Object.freeze({ type: 'object', properties: {} });

export class Tool {
  /**
   * @param {string} name
   * @param {string} description
   * @param {{tag: string, val?: string}} origin
   * @param {object} [parameters] JSON Schema of the arguments
   * @param {string} [owner] the plugin that runs it (its guard tools)
   */
  constructor(name, description, origin, parameters = EMPTY_SCHEMA, owner = undefined) {
    this.name = name;
    this.description = description;
    this.origin = origin;
    this.parameters = parameters;
    // Plugins fetch the whole registry as text after every change: encode once.
    this.parametersJson = JSON.stringify(parameters);
    this.owner = owner;
    /** Search text beyond the definition (a catalog's `x-lazy-tools`): {keywords, examples, descriptions}. */
    this.searchText = undefined;
  }

  get scope() {
    return scopeOf(this.origin);
  }

  /** The tool as the model receives it. */
  schema() {
    return { name: this.name, description: this.description, input_schema: this.parameters };
  }
}

/** Where a scope is, for messages. */
export function scopeName(scope) {
  return scope === undefined ? 'the global scope' : `the scope of agent \`${escape(scope)}\``;
}
