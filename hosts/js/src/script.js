// Scripted sessions: the tools, agents and steps of a session in YAML, each
// step with what it must produce. The format is the Rust harness's
// (`host-harness/src/script.rs`); the fixture folders under `tests/cases/`
// are read by both hosts. Unknown keys are errors, at their line.

import { dirname, join } from 'node:path';

import { MAX_CATALOG_BYTES, parseJsonFile, readText } from './bounded.js';
import { LocatedValue, MAX_FILE_BYTES, renderConfigErrors } from './located-yaml.js';
import { ConfigRejected } from './shell.js';
import { escape, json } from './terminal.js';
import { Tool, builtin, mcp, ofAgent } from './tools.js';

/** A script that says something wrong, at its place. */
export class ScriptError extends Error {
  constructor(place, message) {
    super(`${place.file}:${place.line}:${place.column}: ${message}`);
    this.name = 'ScriptError';
  }
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Reads a script's nodes, each error at the node's place. */
class Reader {
  constructor(located) {
    this.located = located;
  }

  fail(pointer, message) {
    throw new ScriptError(this.located.place(pointer), message);
  }

  at(pointer) {
    if (pointer === '') return this.located.value;
    let node = this.located.value;
    for (const part of pointer.slice(1).split('/')) {
      const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
      // Its own keys only: `constructor` is no field of a mapping that does not have it.
      node = node !== null && typeof node === 'object' && Object.hasOwn(node, key) ? node[key] : undefined;
    }
    return node;
  }

  /** The object at `pointer`, with only `allowed` keys and every `required` one. */
  object(pointer, what, allowed, required = []) {
    const node = this.at(pointer);
    if (!isObject(node)) this.fail(pointer, `${what}: expected a mapping`);
    for (const key of Object.keys(node)) {
      if (!allowed.includes(key)) {
        const expected = allowed.map((k) => `\`${k}\``).join(', ');
        this.fail(`${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, `${what}: unknown field \`${escape(key)}\`, expected one of ${expected}`);
      }
    }
    for (const key of required) {
      if (!Object.hasOwn(node, key)) this.fail(pointer, `${what}: missing field \`${key}\``);
    }
    return node;
  }

  string(pointer, what) {
    const node = this.at(pointer);
    if (typeof node !== 'string') this.fail(pointer, `${what}: expected a string`);
    return node;
  }

  optionalString(pointer, what) {
    return this.at(pointer) === undefined ? undefined : this.string(pointer, what);
  }

  strings(pointer, what) {
    const node = this.at(pointer);
    if (!Array.isArray(node)) this.fail(pointer, `${what}: expected a list of strings`);
    return node.map((_, i) => this.string(`${pointer}/${i}`, what));
  }

  optionalStrings(pointer, what) {
    const node = this.at(pointer);
    return node === undefined || node === null ? undefined : this.strings(pointer, what);
  }

  list(pointer, what) {
    const node = this.at(pointer) ?? [];
    if (!Array.isArray(node)) this.fail(pointer, `${what}: expected a list`);
    return node.map((_, i) => `${pointer}/${i}`);
  }
}

/** A tool entry: a bare name is a built-in; `server` makes it MCP, `agent` puts it in a scope. */
function readTool(reader, pointer) {
  const node = reader.at(pointer);
  if (typeof node === 'string') return new Tool(node, defaultDescription(node), builtin());
  const spec = reader.object(pointer, 'tool', ['name', 'description', 'server', 'agent', 'parameters'], ['name']);
  const name = reader.string(`${pointer}/name`, 'tool name');
  const description = reader.optionalString(`${pointer}/description`, 'tool description') ?? defaultDescription(name);
  const server = reader.optionalString(`${pointer}/server`, 'tool server');
  const agent = reader.optionalString(`${pointer}/agent`, 'tool agent');
  if (server !== undefined && agent !== undefined) {
    reader.fail(pointer, `tool \`${name}\`: give \`server\` or \`agent\`, not both`);
  }
  const origin = server !== undefined ? mcp(server) : agent !== undefined ? ofAgent(agent) : builtin();
  return spec.parameters === undefined
    ? new Tool(name, description, origin)
    : new Tool(name, description, origin, spec.parameters);
}

const defaultDescription = (name) => `The ${name.replaceAll('_', ' ')} tool.`;

function readAgent(reader, pointer) {
  const node = reader.at(pointer);
  if (typeof node === 'string') return { id: node };
  reader.object(pointer, 'agent', ['id', 'restrict'], ['id']);
  return {
    id: reader.string(`${pointer}/id`, 'agent id'),
    restrict: reader.optionalStrings(`${pointer}/restrict`, 'agent restrict'),
  };
}

const OUTCOMES = ['denied', 'refused', 'ok', 'error'];

function readStep(reader, pointer) {
  const node = reader.at(pointer);
  if (node === 'dispose_plugin') return { kind: 'dispose_plugin' };
  if (!isObject(node) || Object.keys(node).length !== 1) {
    reader.fail(pointer, 'a step is one of visible, call, register, unregister, create_agent, fork_agent, dispose_agent, restrict, reconfigure, resend, dispose_plugin, explain, resume, lazy_loads, steady, prompt');
  }
  const [kind] = Object.keys(node);
  const at = `${pointer}/${kind}`;
  switch (kind) {
    case 'visible': {
      reader.object(at, 'visible', ['agent', 'exactly', 'includes', 'excludes'], ['agent']);
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'visible agent'),
        exactly: reader.optionalStrings(`${at}/exactly`, 'visible exactly'),
        includes: reader.optionalStrings(`${at}/includes`, 'visible includes') ?? [],
        excludes: reader.optionalStrings(`${at}/excludes`, 'visible excludes') ?? [],
      };
    }
    case 'call': {
      const call = reader.object(at, 'call', ['agent', 'tool', 'args', 'expect'], ['agent', 'tool', 'expect']);
      const expectAt = `${at}/expect`;
      const expect = reader.object(expectAt, 'expect', ['outcome', 'by', 'reason_contains', 'text_contains', 'json'], ['outcome']);
      if (!OUTCOMES.includes(expect.outcome)) {
        reader.fail(`${expectAt}/outcome`, `unknown outcome \`${escape(expect.outcome)}\`, expected one of ${OUTCOMES.join(', ')}`);
      }
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'call agent'),
        tool: reader.string(`${at}/tool`, 'call tool'),
        args: call.args ?? {},
        expect: {
          outcome: expect.outcome,
          by: reader.optionalString(`${expectAt}/by`, 'expect by'),
          reasonContains: reader.optionalStrings(`${expectAt}/reason_contains`, 'reason_contains') ?? [],
          textContains: reader.optionalStrings(`${expectAt}/text_contains`, 'text_contains') ?? [],
          json: expect.json,
        },
      };
    }
    case 'register':
      return { kind, tools: reader.list(at, 'register').map((p) => readTool(reader, p)) };
    case 'unregister':
      return { kind, names: reader.strings(at, 'unregister') };
    case 'create_agent':
      return { kind, agent: readAgent(reader, at) };
    case 'fork_agent':
      reader.object(at, 'fork_agent', ['id', 'source'], ['id', 'source']);
      return {
        kind,
        id: reader.string(`${at}/id`, 'fork_agent id'),
        source: reader.string(`${at}/source`, 'fork_agent source'),
      };
    case 'explain':
      reader.object(at, 'explain', ['agent', 'tool', 'state', 'summary_contains', 'pointer'], ['agent', 'tool']);
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'explain agent'),
        tool: reader.string(`${at}/tool`, 'explain tool'),
        state: reader.optionalString(`${at}/state`, 'explain state'),
        summaryContains: reader.optionalStrings(`${at}/summary_contains`, 'explain summary_contains') ?? [],
        pointer: reader.optionalString(`${at}/pointer`, 'explain pointer'),
      };
    case 'dispose_agent':
      return { kind, agent: reader.string(at, 'dispose_agent') };
    case 'restrict': {
      reader.object(at, 'restrict', ['agent', 'source', 'allow', 'error'], ['agent', 'source']);
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'restrict agent'),
        source: reader.string(`${at}/source`, 'restrict source'),
        allow: reader.optionalStrings(`${at}/allow`, 'restrict allow'),
        error: reader.optionalString(`${at}/error`, 'restrict error'),
      };
    }
    case 'reconfigure': {
      const step = reader.object(at, 'reconfigure', ['config', 'error'], ['config']);
      return { kind, config: step.config, error: reader.optionalString(`${at}/error`, 'reconfigure error') };
    }
    case 'resend': {
      const event = reader.at(at);
      if (event === 'registry_changed') return { kind, event: 'registry_changed' };
      reader.object(at, 'resend', ['agent_created', 'agent_disposed']);
      const [name] = Object.keys(event);
      if (Object.keys(event).length !== 1) reader.fail(at, 'resend one event');
      return { kind, event: name, agent: reader.string(`${at}/${name}`, `resend ${name}`) };
    }
    case 'resume': {
      const step = reader.object(at, 'resume', ['config', 'error']);
      return { kind, config: step.config, error: reader.optionalString(`${at}/error`, 'resume error') };
    }
    case 'lazy_loads': {
      const step = reader.object(at, 'lazy_loads', ['group', 'times'], ['group', 'times']);
      return { kind, group: reader.string(`${at}/group`, 'lazy_loads group'), times: step.times };
    }
    case 'steady':
      reader.object(at, 'steady', ['agent', 'during'], ['agent', 'during']);
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'steady agent'),
        during: reader.list(`${at}/during`, 'steady during').map((p) => readStep(reader, p)),
      };
    case 'prompt':
      reader.object(at, 'prompt', ['agent', 'contains', 'excludes'], ['agent']);
      return {
        kind,
        agent: reader.string(`${at}/agent`, 'prompt agent'),
        contains: reader.optionalStrings(`${at}/contains`, 'prompt contains') ?? [],
        excludes: reader.optionalStrings(`${at}/excludes`, 'prompt excludes') ?? [],
      };
    default:
      return reader.fail(at, `unknown step \`${escape(kind)}\``);
  }
}

/** A lazy group: `{name, description, tools, declare?, fail?}`. */
function readLazyGroup(reader, pointer) {
  reader.object(pointer, 'lazy group', ['name', 'description', 'tools', 'declare', 'fail'], ['name', 'description']);
  const tools = reader.list(`${pointer}/tools`, 'lazy group tools').map((p) => readTool(reader, p));
  return {
    name: reader.string(`${pointer}/name`, 'lazy group name'),
    description: reader.string(`${pointer}/description`, 'lazy group description'),
    tools,
    declare: reader.optionalStrings(`${pointer}/declare`, 'lazy group declare'),
    fail: reader.optionalString(`${pointer}/fail`, 'lazy group fail'),
  };
}

/** A parsed script: `{catalog, tools, agents, steps: [{step, line}]}`. */
export function parseScript(file, text) {
  const located = LocatedValue.parse(file, text);
  const reader = new Reader(located);
  reader.object('', 'script', ['catalog', 'tools', 'agents', 'lazy_groups', 'steps']);
  return {
    lazyGroups: reader.list('/lazy_groups', 'lazy_groups').map((p) => readLazyGroup(reader, p)),
    catalog: reader.optionalString('/catalog', 'catalog'),
    tools: reader.list('/tools', 'tools').map((p) => readTool(reader, p)),
    agents: reader.list('/agents', 'agents').map((p) => readAgent(reader, p)),
    steps: reader.list('/steps', 'steps').map((p) => ({
      step: readStep(reader, p),
      line: located.place(p).line,
    })),
  };
}

/** A YAML file's text, within MAX_FILE_BYTES: a regular file of UTF-8 (bounded.js). */
const readYaml = (path) => readText(path, MAX_FILE_BYTES, 'a YAML file here');

export function loadScript(path) {
  return parseScript(path, readYaml(path));
}

function createAgent(shell, agent) {
  const slash = agent.id.lastIndexOf('/');
  const [parent, name] = slash < 0 ? [undefined, agent.id] : [agent.id.slice(0, slash), agent.id.slice(slash + 1)];
  shell.createAgent(name, parent);
  if (agent.restrict) shell.restrict(agent.id, 'parent', agent.restrict);
}

/** Registers the script's catalog and tools and creates its agents (`base`: the script's folder). */
export function setUp(script, shell, base) {
  if (script.catalog !== undefined) {
    const path = join(base, script.catalog);
    shell.registerCatalog(parseJsonFile(path, readText(path, MAX_CATALOG_BYTES, 'a catalog'), 'the catalog'));
  }
  // Agent-scoped tools need their agent first.
  shell.registerTools(script.tools.filter((t) => t.scope === undefined));
  for (const agent of script.agents) createAgent(shell, agent);
  shell.registerTools(script.tools.filter((t) => t.scope !== undefined));
  if (script.lazyGroups.length > 0) {
    const byName = new Map(script.lazyGroups.map((g) => [g.name, g]));
    shell.setLazyGroups(
      script.lazyGroups.map((g) => ({
        name: g.name,
        description: g.description,
        toolNames: g.declare ?? g.tools.map((t) => t.name),
      })),
      (name) => {
        const group = byName.get(name);
        if (group.fail !== undefined) throw new Error(group.fail);
        return group.tools;
      },
    );
  }
}

/** The agent's next request as a provider receives it: the tools array, then the system prompt. */
export function requestBytes(shell, agent) {
  const request = shell.assemble(agent);
  return `${JSON.stringify(request.tools)}\n${request.systemPrompt ?? ''}`;
}

/** One line a person reads: the plugin's reason or text shown, never obeyed by a terminal. */
export function describe(outcome) {
  const line = (text) => escape(String(text).replaceAll('\n', ' | '));
  switch (outcome.kind) {
    case 'denied':
      return `denied by ${escape(outcome.by)}: ${line(outcome.reason)}`;
    case 'refused':
      return `refused: ${line(outcome.reason)}`;
    default:
      return `${outcome.isError ? 'error: ' : ''}${line(outcome.text)}`;
  }
}

/** Runs `fn`, which must fail with a message containing `expected` when one is given. */
function expectError(fn, expected) {
  let message;
  try {
    fn();
  } catch (e) {
    message = e.message;
  }
  if (message === undefined && expected !== undefined) {
    throw new Error(`expected the error \`${expected}\`, but it succeeded`);
  }
  if (message !== undefined && expected === undefined) throw new Error(message);
  if (message !== undefined && !message.includes(expected)) {
    throw new Error(`expected an error containing \`${expected}\`, got \`${message}\``);
  }
}

/** Runs one step and checks what it must produce; returns a transcript line, throws what differed. */
export function runStep(shell, pluginId, step) {
  switch (step.kind) {
    case 'visible': {
      const names = shell.nextRequest(step.agent).map((t) => t.name);
      const list = JSON.stringify(names);
      if (step.exactly && JSON.stringify(step.exactly) !== list) {
        throw new Error(`${step.agent} sees ${list}, expected exactly ${JSON.stringify(step.exactly)}`);
      }
      for (const name of step.includes) {
        if (!names.includes(name)) throw new Error(`${step.agent} does not see \`${name}\`; it sees ${list}`);
      }
      for (const name of step.excludes) {
        if (names.includes(name)) throw new Error(`${step.agent} sees \`${name}\`, which must be hidden`);
      }
      return `${step.agent} sees ${names.join(', ')}`;
    }
    case 'call': {
      const outcome = shell.call(step.agent, step.tool, step.args);
      try {
        checkOutcome(outcome, step.expect);
      } catch (e) {
        throw new Error(`${step.agent} calling \`${step.tool}\`: ${describe(outcome)}: ${e.message}`);
      }
      return `${step.agent} calls ${step.tool}: ${describe(outcome)}`;
    }
    case 'register':
      shell.registerTools(step.tools);
      return `registered ${step.tools.map((t) => t.name).join(', ')}`;
    case 'unregister':
      shell.unregisterTools(step.names);
      return `unregistered ${step.names.join(', ')}`;
    case 'create_agent':
      createAgent(shell, step.agent);
      return `created ${step.agent.id}`;
    case 'fork_agent': {
      const slash = step.id.lastIndexOf('/');
      const [parent, name] = slash < 0 ? [undefined, step.id] : [step.id.slice(0, slash), step.id.slice(slash + 1)];
      shell.forkAgent(name, parent, step.source);
      return `forked ${step.id} from ${step.source}`;
    }
    case 'explain': {
      const located = shell.explainLocated(pluginId, step.agent, step.tool);
      const { state, summary } = located.explanation;
      if (step.state !== undefined && state !== step.state) {
        throw new Error(`explain says ${state}, expected ${step.state}: ${summary}`);
      }
      for (const needle of step.summaryContains) {
        if (!summary.includes(needle)) {
          throw new Error(`the explanation does not contain \`${needle}\`: ${summary}`);
        }
      }
      if (step.pointer !== undefined) {
        const actual = located.pointer ?? 'none';
        if (actual !== step.pointer) {
          throw new Error(`the deciding entry is at \`${actual}\`, expected \`${step.pointer}\`: ${summary}`);
        }
      }
      return summary;
    }
    case 'dispose_agent':
      shell.disposeAgent(step.agent);
      return `disposed ${step.agent}`;
    case 'restrict':
      expectError(() => shell.restrict(step.agent, step.source, step.allow), step.error);
      return `${step.source} restricts ${step.agent}`;
    case 'reconfigure':
      expectError(() => shell.reconfigure(pluginId, step.config), step.error);
      return 'reconfigured';
    case 'resend': {
      const { instance } = shell.plugin(pluginId);
      let result = { ok: true };
      if (step.event === 'agent_created') {
        const slash = step.agent.lastIndexOf('/');
        result = instance.agentCreated(step.agent, slash < 0 ? undefined : step.agent.slice(0, slash));
      } else if (step.event === 'agent_disposed') {
        instance.agentDisposed(step.agent);
      } else {
        result = instance.registryChanged();
      }
      if (!result.ok) throw new Error(`resent ${step.event}: ${json(result.error)}`);
      return `resent ${step.event}`;
    }
    case 'dispose_plugin':
      shell.disposePlugin(pluginId);
      return `disposed plugin ${pluginId}`;
    case 'resume':
      expectError(() => shell.resumePlugin(pluginId, step.config), step.error);
      return 'resumed';
    case 'lazy_loads': {
      const group = shell.core.lazyGroups.get(step.group);
      if (!group) throw new Error(`no lazy group \`${step.group}\``);
      if (group.loads !== step.times) {
        throw new Error(`group \`${step.group}\` was loaded ${group.loads} times, expected ${step.times}`);
      }
      return `group ${step.group} loaded ${group.loads} times`;
    }
    case 'steady': {
      const first = requestBytes(shell, step.agent);
      step.during.forEach((inner, index) => {
        try {
          runStep(shell, pluginId, inner);
        } catch (e) {
          throw new Error(`steady step ${index + 1}: ${e.message}`);
        }
        const now = requestBytes(shell, step.agent);
        if (now !== first) {
          throw new Error(`after steady step ${index + 1}, ${step.agent}'s request changed:\nbefore: ${first}\nafter:  ${now}`);
        }
      });
      return `${step.agent}'s request stayed the same over ${step.during.length} steps`;
    }
    case 'prompt': {
      const prompt = shell.assemble(step.agent).systemPrompt ?? '';
      for (const needle of step.contains) {
        if (!prompt.includes(needle)) throw new Error(`the system prompt does not contain \`${needle}\`: ${prompt}`);
      }
      for (const needle of step.excludes) {
        if (prompt.includes(needle)) throw new Error(`the system prompt contains \`${needle}\`: ${prompt}`);
      }
      return prompt;
    }
    default:
      throw new Error(`unknown step ${step.kind}`);
  }
}

function checkOutcome(outcome, expect) {
  const kind = outcome.kind === 'completed' ? (outcome.isError ? 'error' : 'ok') : outcome.kind;
  if (kind !== expect.outcome) throw new Error(`expected ${expect.outcome}, got ${kind}`);
  if (expect.by !== undefined && outcome.kind === 'denied' && outcome.by !== expect.by) {
    throw new Error(`expected a deny by \`${expect.by}\`, got one by \`${outcome.by}\``);
  }
  for (const needle of expect.reasonContains) {
    if (!outcome.reason?.includes(needle)) throw new Error(`the reason does not contain \`${needle}\``);
  }
  for (const needle of expect.textContains) {
    if (!outcome.text?.includes(needle)) throw new Error(`the text does not contain \`${needle}\``);
  }
  if (expect.json !== undefined) {
    if (outcome.kind !== 'completed') throw new Error('no JSON result to compare');
    const differs = jsonSubset(expect.json, outcome.json, '');
    if (differs !== undefined) {
      throw new Error(`the JSON result differs at \`${escape(differs)}\`: ${json(outcome.json)}`);
    }
  }
}

/**
 * Whether `expected` is a subset of `actual`: every key given must match;
 * lists must match element by element and in length. Returns where it is
 * not, or undefined.
 */
export function jsonSubset(expected, actual, path) {
  if (isObject(expected) && isObject(actual)) {
    for (const [key, value] of Object.entries(expected)) {
      const at = `${path}/${key}`;
      if (!Object.hasOwn(actual, key)) return at;
      const differs = jsonSubset(value, actual[key], at);
      if (differs !== undefined) return differs;
    }
    return undefined;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      return `${path} (length ${actual.length} != ${expected.length})`;
    }
    for (let i = 0; i < expected.length; i++) {
      const differs = jsonSubset(expected[i], actual[i], `${path}/${i}`);
      if (differs !== undefined) return differs;
    }
    return undefined;
  }
  return JSON.stringify(expected) === JSON.stringify(actual) ? undefined : path;
}

/**
 * Runs one fixture folder: `case.yml` (steps), `profile.yml` (the plugin's
 * config node; none means no config), `error.txt` (the exact config errors
 * expected). Throws what differed, at the step's line.
 */
export function runCase(dir, component, newShell, pluginId = 'lazy-tools') {
  const script = loadScript(join(dir, 'case.yml'));
  const profilePath = join(dir, 'profile.yml');
  let config;
  try {
    config = LocatedValue.parse('profile.yml', readYaml(profilePath));
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  let expectedError;
  try {
    expectedError = readText(join(dir, 'error.txt'), MAX_FILE_BYTES, 'an error.txt');
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }

  const shell = newShell();
  try {
    return runSteps(shell, script, dir, component, pluginId, config, expectedError);
  } finally {
    // The plugins' threads go with the case.
    shell.close();
  }
}

/** runCase's work on `shell`. */
function runSteps(shell, script, dir, component, pluginId, config, expectedError) {
  setUp(script, shell, dirname(join(dir, 'case.yml')));
  try {
    shell.installPlugin(pluginId, component, config ? config.value : null);
  } catch (e) {
    if (!(e instanceof ConfigRejected) || expectedError === undefined) throw e;
    if (!config) throw new Error('config errors without a profile.yml');
    const actual = renderConfigErrors(config, e.errors);
    if (actual.trim() !== expectedError.trim()) {
      throw new Error(`config errors differ.\nexpected:\n${expectedError.trim()}\nactual:\n${actual}`);
    }
    return { configErrors: actual };
  }
  if (expectedError !== undefined) {
    throw new Error(`the config was accepted; expected:\n${expectedError}`);
  }
  const transcript = [];
  script.steps.forEach(({ step, line }, index) => {
    try {
      transcript.push(runStep(shell, pluginId, step));
    } catch (e) {
      e.message = `case.yml:${line}: step ${index + 1} failed: ${e.message}`;
      throw e;
    }
  });
  return { transcript };
}
