// The host side of the contract: what the shell gives one plugin instance.
// This is the only module that implements `dsh:tool-restriction/host`; a new
// import of a later contract version is one more entry in `hostInterface`.
//
// jco's calling convention: a `result<T, E>` import returns
// `{tag: 'ok', val}` or `{tag: 'err', val}`; an `option<T>` is the value or
// `undefined`; a `u64` is a BigInt.

import * as wasiRandom from '@bytecodealliance/preview2-shim/random';

import { LOADER_MS } from './plugin-thread.js';
import { pushLog } from './plugin-log.js';
import { sandboxedWasi } from './wasi-sandbox.js';

/** A tool as a WIT `tool-def`. */
export function toolToWit(tool) {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parametersJson,
    origin: tool.origin,
  };
}

/**
 * The registry as one WIT 0.3.0 `tool-table`: every tool's name, description
 * and parameters joined (each well-formed), where each ends in UTF-8 bytes, and each distinct
 * origin once. A list of `tool-def` is lowered string by string, each through
 * a call into the plugin's allocator; a table is a few values in all.
 * `undefined` when the texts pass 4 GiB, which a table cannot address.
 */
export function registryTable(tools) {
  const texts = [];
  const ends = new Uint32Array(3 * tools.length);
  const originOf = new Uint32Array(tools.length);
  const origins = [];
  const originAt = new Map();
  let bytes = 0;
  tools.forEach((tool, i) => {
    [tool.name, tool.description, tool.parametersJson].forEach((raw, j) => {
      // Half a character (a lone surrogate) becomes U+FFFD, as jco writes it
      // into a string: its UTF-8 bytes are counted as the plugin reads them.
      const text = raw.toWellFormed();
      texts.push(text);
      bytes += Buffer.byteLength(text, 'utf8');
      ends[3 * i + j] = bytes;
    });
    // A tag never holds a colon: `mcp:a` and `agent:a` stay apart.
    const key = `${tool.origin.tag}:${tool.origin.val ?? ''}`;
    let at = originAt.get(key);
    if (at === undefined) {
      at = origins.length;
      originAt.set(key, at);
      origins.push(tool.origin);
    }
    originOf[i] = at;
  });
  if (bytes > 0xffffffff) return undefined;
  return { texts: texts.join(''), ends, origins, originOf };
}

const ok = (val) => ({ tag: 'ok', val });
const err = (val) => ({ tag: 'err', val });

/**
 * `dsh:tool-restriction/host` for the plugin `pluginId`, over the shell's
 * state `core`. `logs` collects the plugin's log lines (the last 256, each
 * bounded and escaped: plugin-log.js).
 */
export function hostInterface(core, pluginId, logs) {
  return {
    registry: () => core.tools.map(toolToWit),
    // WIT 0.3.0: the same tools as one table when the shell is set to build
    // them (`ShellCore.registryTables`, off by default); otherwise `none`, and
    // the plugin reads the list above.
    registryTable: () => (core.registryTables ? registryTable(core.tools) : undefined),

    allowedTools(agent) {
      try {
        return ok(core.effective(agent, pluginId).map((t) => t.name));
      } catch (e) {
        return err(e.message);
      }
    },

    restrict(agent, allow) {
      try {
        core.restrict(agent, pluginId, allow);
        return ok(undefined);
      } catch (e) {
        return err(e.message);
      }
    },

    expose(agent, visible) {
      try {
        core.expose(agent, pluginId, visible);
        return ok(undefined);
      } catch (e) {
        return err(e.message);
      }
    },

    log(level, message) {
      pushLog(logs, level, message);
    },

    toolGroups: () =>
      [...core.groups].map(([name, description]) => ({ name, description })),

    countTokens(texts) {
      if (!core.tokenCounter) return undefined;
      return Uint32Array.from(texts, (t) => core.tokenCounter(t));
    },

    toolsGeneration: () => core.generation,

    agentGeneration: (agent) => core.agentGeneration(agent, pluginId),

    lazyGroups: () => [...core.lazyGroups.values()].map(({ decl }) => decl),

    // A `load-refusal` is `denied` (this agent only: deferral is not
    // authorization, so an agent starts nothing it may use none of) or `failed`.
    loadGroup(agent, name) {
      try {
        if (!core.mayLoadGroup(agent, pluginId, name)) {
          return err({
            tag: 'denied',
            val: `agent \`${agent}\` may call none of the tools of group \`${name}\`, so the shell did not load it`,
          });
        }
      } catch (e) {
        return err({ tag: 'denied', val: e.message });
      }
      try {
        return ok(core.loadGroup(name).map(toolToWit));
      } catch (e) {
        return err({ tag: 'failed', val: e.message });
      }
    },
    // The same rule as `loadGroup`'s, loading nothing; an unknown agent may not.
    mayLoadGroup(agent, name) {
      try {
        return core.mayLoadGroup(agent, pluginId, name);
      } catch {
        return false;
      }
    },
    // WIT 0.3.0: search text beyond each tool's definition.
    toolEnrichment: () =>
      core.tools
        .filter((t) => t.searchText !== undefined)
        .map((t) => ({ tool: t.name, ...t.searchText })),

    // WIT 0.3.0: this shell keeps no log of registry changes, so it never
    // says what changed (`none`) and the plugin fetches the whole registry.
    // The revision only has to be a number; the generation is one.
    registryRevision: () => core.generation,
    registryChanges: (_since) => undefined,
    // Nor a revision of the groups, lazy groups and search text (`none`):
    // the plugin fetches them on every registry change.
    metadataRevision: () => undefined,
    // WIT 0.3.0: nor what changed for one agent, so the plugin asks
    // `allowed-tools` whole whenever an agent's generation moved.
    allowedChanges: (_agent, _since) => undefined,
  };
}

// The plugin's std imports WASI p2 (stdio, environment, exit, random). Like
// the Rust harness's empty WasiCtx, it inherits nothing of the host's: no
// stdin, stdout or stderr (what it writes goes to its log), no environment,
// no arguments, no working directory, and its `exit` is a trap
// (wasi-sandbox.js). Only randomness comes from the shim.

/**
 * Every import the transpiled component may ask for, by interface name
 * without its version: jco's instantiation mode looks imports up that way.
 */
export function importObject(core, pluginId, logs) {
  return {
    // Not an import (a symbol key: jco never sees it): the plugin's thread reads it.
    [LOADER_MS]: () => core.loaderMs,
    'dsh:tool-restriction/host': hostInterface(core, pluginId, logs),
    'dsh:tool-restriction/types': {},
    ...sandboxedWasi(logs),
    'wasi:random/insecure-seed': wasiRandom.insecureSeed,
    'wasi:random/random': wasiRandom.random,
    'wasi:random/insecure': wasiRandom.insecure,
  };
}
