// A plugin that traps is quarantined, as in the Rust harness: never called
// again, its tools and restriction layers gone, the other plugins told; the
// shell goes on without it. A plugin that fails to start leaves nothing.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadComponent } from '../src/component.js';
import { MAX_PLUGIN_RETURNED_BYTES, MAX_STATE_BYTES, returnedBytes } from '../src/plugin.js';
import { Shell } from '../src/shell.js';
import { Tool, builtin, mcp } from '../src/tools.js';
import { fakeComponent } from './fake-plugin.js';
import { hostileComponent } from './hostile-component.js';
import { names, shell } from './two-tools.js';

const component = await loadComponent();

test('a real component that traps in pre-execute is quarantined and the shell goes on without it', async () => {
  const s = shell();
  s.installPlugin('lazy-tools', component, null);
  s.installPlugin('trap', await hostileComponent({ 'pre-execute': 'unreachable' }), null);
  // Its view is empty: while it runs, the agent is shown nothing.
  assert.deepEqual(s.nextRequest('main'), []);
  assert.equal(s.call('main', 'bash', {}).kind, 'completed');
  assert.deepEqual(s.quarantined().map(String), [
    'plugin `trap` is disabled: it failed in pre-execute (wasm trap: wasm `unreachable` instruction executed); its restrictions and tools are lifted',
  ]);
  // jco refuses every later call into a trapped instance: the shell makes none.
  assert.equal(s.call('main', 'read', {}).kind, 'completed');
  assert.ok(names(s.nextRequest('main')).includes('bash'));
  s.createAgent('worker', 'main');
  s.registerTools([new Tool('grep', '', builtin())]);
  assert.ok(names(s.nextRequest('main/worker')).includes('grep'));
  assert.doesNotThrow(() => s.assemble('main'));
  assert.throws(() => s.explain('trap', 'main', 'bash'), { message: /^plugin `trap` is disabled: it failed in pre-execute/ });
  s.disposePlugin('trap');
  assert.deepEqual(s.quarantined(), []);
});

test('a real component that traps in registry-changed is quarantined when tools come', async () => {
  const s = shell();
  s.installPlugin('trap', await hostileComponent({ 'registry-changed': 'unreachable' }), null);
  s.registerTools([new Tool('grep', '', builtin())]);
  assert.deepEqual(s.quarantined().map((q) => q.during), ['registry-changed']);
  assert.deepEqual(names(s.nextRequest('main')), ['bash', 'read', 'grep']);
});

/** A plugin with a guard tool that restricts every agent to `read` and traps in export `at`. */
const trapping = (at) =>
  fakeComponent((imports) => {
    const host = imports['dsh:tool-restriction/host'];
    return {
      guardTools: () => [{ name: 'guard', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      agentCreated(agent) {
        if (at === 'agent-created' && agent === 'main/worker') throw new Error('boom');
        host.restrict(agent, ['read']);
      },
      registryChanged() {
        if (at === 'registry-changed') throw new Error('boom');
      },
      visibleTools(agent) {
        if (at === 'visible-tools') throw new Error('boom');
        return host.allowedTools(agent).val;
      },
      systemPrompt() {
        if (at === 'system-prompt') throw new Error('boom');
        return 'text';
      },
      preExecute() {
        if (at === 'pre-execute') throw new Error('boom');
        return { tag: 'pass' };
      },
      resolveCall() {
        if (at === 'resolve-call') throw new Error('boom');
        return { tag: 'direct' };
      },
      execute() {
        if (at === 'execute') throw new Error('boom');
        return { json: '{}', text: 'ran', isError: false };
      },
      agentDisposed() {
        if (at === 'agent-disposed') throw new Error('boom');
      },
    };
  });

test('a trap in any call quarantines the plugin: its layers lifted, its tools removed, the others told', () => {
  const cases = [
    ['visible-tools', (s) => s.nextRequest('main')],
    ['system-prompt', (s) => s.systemPrompt('main')],
    ['pre-execute', (s) => assert.equal(s.call('main', 'read', {}).kind, 'completed')],
    ['agent-created', (s) => s.createAgent('worker', 'main')],
    ['registry-changed', (s) => s.registerTools([new Tool('grep', '', builtin())])],
    ['agent-disposed', (s) => s.disposeAgent('main/child')],
    [
      'resolve-call',
      (s) =>
        assert.deepEqual(s.call('main', 'guard', {}), {
          kind: 'refused',
          reason: 'tool `guard` failed: its plugin `p` is disabled (boom)',
        }),
    ],
    [
      'execute',
      (s) =>
        assert.deepEqual(s.call('main', 'guard', {}), {
          kind: 'refused',
          reason: 'tool `guard` failed: its plugin `p` is disabled (boom)',
        }),
    ],
  ];
  for (const [at, act] of cases) {
    const s = shell();
    s.createAgent('child', 'main');
    s.installPlugin('p', trapping(at), null);
    s.installPlugin('other', fakeComponent(), null);
    assert.deepEqual(names(s.core.effective('main')), ['read', 'guard'], at);
    let toldOther = 0;
    const other = s.plugin('other').instance;
    const changed = other.registryChanged.bind(other);
    other.registryChanged = () => (toldOther++, changed());
    act(s);
    assert.deepEqual(s.quarantined().map((q) => q.during), [at], at);
    assert.ok(toldOther > 0, `${at}: the other plugin was not told`);
    // Nothing of it is in force: every agent gets what the rest of its chain authorizes.
    assert.deepEqual(names(s.core.effective('main')), ['bash', 'read', ...(at === 'registry-changed' ? ['grep'] : [])], at);
    assert.ok(!s.core.tools.some((t) => t.owner === 'p'), at);
    assert.doesNotThrow(() => s.nextRequest('main'), at);
  }
});

test('one plugin refusing registry-changed does not keep the others from hearing of the change, as in the Rust harness', () => {
  const s = shell();
  const heard = [];
  const refusing = (id) => fakeComponent(() => ({
    registryChanged() {
      heard.push(id);
      throw { payload: { tag: 'host', val: `${id} is busy\u001b[2J` } };
    },
  }));
  s.installPlugin('a', refusing('a'), null);
  s.installPlugin('b', fakeComponent(() => ({ registryChanged: () => void heard.push('b') })), null);
  s.installPlugin('c', refusing('c'), null);
  heard.length = 0;
  assert.throws(() => s.registerTools([new Tool('grep', '', builtin())]), {
    message:
      'the registry change is in force and every plugin was told of it, but ' +
      'plugin `a` could not take it in (registry-changed): the host refused: a is busy\\u{1b}[2J; ' +
      'plugin `c` could not take it in (registry-changed): the host refused: c is busy\\u{1b}[2J',
  });
  assert.deepEqual(heard, ['a', 'b', 'c']);
  // The change is in force, and nobody is quarantined for an error value.
  assert.ok(names(s.core.effective('main')).includes('grep'));
  assert.deepEqual(s.quarantined(), []);
});

test("a refusal of the change a forwarded call's lazy load made is logged, and the call's result is kept, as in the Rust harness", () => {
  const s = shell();
  s.setLazyGroups([{ name: 'db', description: 'A SQL database.', toolNames: ['db__query'] }], () => [
    new Tool('db__query', 'Run a SQL query.', mcp('db')),
  ]);
  let told = 0;
  s.installPlugin('busy', fakeComponent(() => ({
    registryChanged() {
      told += 1;
      throw { payload: { tag: 'host', val: 'busy' } };
    },
  })), null);
  // A dispatcher that loads the group the forwarded tool is in, as lazy-tools' `deferred_tool_call`.
  s.installPlugin('dispatch', fakeComponent((imports) => {
    const host = imports['dsh:tool-restriction/host'];
    return {
      guardTools: () => [{ name: 'call_deferred', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      resolveCall(agent) {
        host.loadGroup(agent, 'db');
        return { tag: 'forward', val: { tool: 'db__query', arguments: '{"sql": "select 1"}', implicitlyLoaded: ['db__query'] } };
      },
    };
  }), null);
  told = 0;
  const outcome = s.call('main', 'call_deferred', { tool: 'db__query' });
  assert.equal(outcome.kind, 'completed', JSON.stringify(outcome));
  assert.deepEqual(outcome.json, { emulated: true, tool: 'db__query', arguments: { sql: 'select 1' } });
  assert.equal(told, 1, 'the plugins heard of the load');
  assert.deepEqual(s.plugin('busy').instance.logs.at(-1), {
    level: 'warn',
    message: 'the registry change is in force and every plugin was told of it, but plugin `busy` could not take it in (registry-changed): the host refused: busy',
  });
  assert.deepEqual(s.plugin('dispatch').instance.logs, []);
  assert.deepEqual(s.quarantined(), []);
});

test('a group a guard tool loads is told to every plugin when the call ends, as in the Rust harness', async () => {
  const s = shell();
  s.setLazyGroups([{ name: 'db', description: 'A SQL database.', toolNames: ['db__query'] }], () => [
    new Tool('db__query', 'Run a SQL query.', mcp('db')),
  ]);
  s.installPlugin('lazy-tools', component, { defer: ['db__*'] });
  let told = 0;
  s.installPlugin('other', fakeComponent(() => ({ registryChanged: () => void (told += 1) })), null);
  told = 0;
  assert.equal(s.call('main', 'load_tools', { group_id: 'db' }).kind, 'completed');
  assert.equal(told, 1);
  assert.ok(names(s.nextRequest('main')).includes('db__query'));

  // A guard that loads the group and then fails (an error value, or a trap) tells it once.
  for (const fail of ['refuses', 'traps']) {
    const t = shell();
    t.setLazyGroups([{ name: 'db', description: 'A SQL database.', toolNames: ['db__query'] }], () => [
      new Tool('db__query', 'Run a SQL query.', mcp('db')),
    ]);
    t.installPlugin('loader', fakeComponent((imports) => ({
      guardTools: () => [{ name: 'g', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      execute(agent) {
        imports['dsh:tool-restriction/host'].loadGroup(agent, 'db');
        if (fail === 'traps') throw new Error('boom');
        throw { payload: { tag: 'host', val: 'loaded, then refused' } };
      },
    })), null);
    let heard = 0;
    t.installPlugin('other', fakeComponent(() => ({ registryChanged: () => void (heard += 1) })), null);
    heard = 0;
    if (fail === 'traps') assert.equal(t.call('main', 'g', {}).kind, 'refused');
    else assert.throws(() => t.call('main', 'g', {}), /loaded, then refused/);
    assert.equal(heard, 1, fail);
  }

  // A plugin's pre-execute that loads it, for a call then denied or run by the shell.
  for (const deny of [true, false]) {
    const t = shell();
    t.setLazyGroups([{ name: 'db', description: 'A SQL database.', toolNames: ['db__query'] }], () => [
      new Tool('db__query', 'Run a SQL query.', mcp('db')),
    ]);
    t.installPlugin('loader', fakeComponent((imports) => ({
      preExecute(agent) {
        imports['dsh:tool-restriction/host'].loadGroup(agent, 'db');
        return deny ? { tag: 'deny', val: 'no' } : { tag: 'pass' };
      },
    })), null);
    let heard = 0;
    t.installPlugin('other', fakeComponent(() => ({ registryChanged: () => void (heard += 1) })), null);
    heard = 0;
    assert.equal(t.call('main', 'bash', {}).kind, deny ? 'denied' : 'completed');
    assert.equal(heard, 1, `denied: ${deny}`);
  }
});

/** A plugin like `trapping`'s that returns more text than a call may at export `at`. */
const talkative = (at) =>
  fakeComponent((imports) => {
    const host = imports['dsh:tool-restriction/host'];
    const big = 'x'.repeat(MAX_PLUGIN_RETURNED_BYTES + 1);
    return {
      guardTools: () => [{ name: 'guard', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      agentCreated: (agent) => host.restrict(agent, ['read']),
      visibleTools: (agent) => [...host.allowedTools(agent).val, ...(at === 'visible-tools' ? [big] : [])],
      systemPrompt: () => (at === 'system-prompt' ? big : 'text'),
      preExecute: () => (at === 'pre-execute' ? { tag: 'deny', val: big } : { tag: 'pass' }),
      execute: () => ({ json: '{}', text: at === 'execute' ? big : 'ran', isError: false }),
      registryChanged() {
        if (at === 'registry-changed') throw { payload: { tag: 'host', val: big } };
      },
      explainLocated: () => ({
        explanation: { state: 'visible', rule: { tag: 'no-rule' }, summary: at === 'explain' ? big : 'says nothing' },
      }),
      restoreState() {
        if (at === 'restore-state') throw { payload: big };
      },
    };
  });

test('a plugin that returns more text than a call may is quarantined like one that traps', () => {
  // A list of many short names counts one byte an item besides its text.
  assert.equal(returnedBytes(['', '', 'ab']), 5);
  assert.equal(returnedBytes({ tag: 'deny', val: 'no' }), 2);
  const cases = [
    ['visible-tools', (s) => s.nextRequest('main')],
    ['system-prompt', (s) => s.systemPrompt('main')],
    ['pre-execute', (s) => s.call('main', 'read', {})],
    ['execute', (s) => s.call('main', 'guard', {})],
    ['registry-changed', (s) => s.registerTools([new Tool('grep', '', builtin())])],
    // Outside a request's path, and failing the shell's own call.
    ['explain', (s) => assert.throws(() => s.explain('p', 'main', 'read'), /is disabled/)],
    ['restore-state', (s) => assert.throws(() => s.restoreState('p', '{}'), /is disabled/)],
  ];
  for (const [at, act] of cases) {
    const s = shell();
    s.installPlugin('p', talkative(at), null);
    assert.deepEqual(names(s.core.effective('main')), ['read', 'guard'], at);
    act(s);
    const [q] = s.quarantined();
    assert.equal(q?.during, at, at);
    assert.match(String(q), /returned too much: 167772[0-9]{2} bytes \(limit 16777216\)/, at);
    assert.deepEqual(names(s.core.effective('main')), ['bash', 'read', ...(at === 'registry-changed' ? ['grep'] : [])], at);
  }
});

test('guard tools are measured as written, and a state has its own bound', () => {
  // 17 MiB of whitespace is `{}` once parsed: refused at install all the same.
  const spaces = ' '.repeat(MAX_PLUGIN_RETURNED_BYTES);
  const wordy = fakeComponent(() => ({
    guardTools: () => [{ name: 'guard', description: '', parameters: `{${spaces}}`, origin: { tag: 'builtin' } }],
  }));
  const s = shell();
  assert.throws(() => s.installPlugin('p', wordy, null), /returned too much: 16777224 bytes/);
  assert.deepEqual(s.quarantined(), []);

  // A state no shell would restore is not saved; the plugin stays. Its error has every call's bound.
  const states = (value) => fakeComponent(() => ({ exportState: value }));
  const t = shell();
  t.installPlugin('big', states(() => 'x'.repeat(MAX_STATE_BYTES + 1)), null);
  assert.throws(() => t.exportState('big'), {
    message: 'plugin `big` exported a state of 16777217 bytes, more than the 16777216 a shell restores: not saved',
  });
  t.installPlugin('wordy', states(() => {
    throw { payload: { tag: 'host', val: 'x'.repeat(MAX_PLUGIN_RETURNED_BYTES + 1) } };
  }), null);
  assert.throws(() => t.exportState('wordy'), /disabled/);
  // Only `wordy`: the plugin whose state was too large is not disabled.
  assert.deepEqual(t.quarantined().map((q) => q.during), ['export-state']);
  assert.match(String(t.quarantined()[0]), /^plugin `wordy` is disabled/);
});

test('a plugin whose guard tool takes a name already used is refused before anything is installed', () => {
  const s = new Shell();
  s.registerTools([new Tool('bash', '', builtin()), new Tool('load_tools', 'a shell tool', builtin())]);
  for (const agents of [[], ['main']]) {
    for (const agent of agents) s.createAgent(agent);
    const generation = s.core.generation;
    assert.throws(() => s.installPlugin('lazy-tools', component, null), {
      message:
        "plugin `lazy-tools` declares a tool `load_tools`, but that name is already a built-in tool: a plugin cannot take another tool's name",
    });
    assert.deepEqual(s.plugins, []);
    assert.equal(s.core.generation, generation);
    // The shell still works: a new agent, a request.
    s.createAgent(`after${agents.length}`);
    assert.deepEqual(names(s.nextRequest(`after${agents.length}`)), ['bash', 'load_tools']);
  }
  const twice = fakeComponent(() => ({
    guardTools: () => ['g', 'g'].map((name) => ({ name, description: '', parameters: '{}', origin: { tag: 'builtin' } })),
  }));
  assert.throws(() => s.installPlugin('p', twice, null), { message: 'plugin `p` declares its tool `g` twice' });
});

test('a plugin that refuses or traps on an agent while installed leaves nothing behind, and can be installed again', async () => {
  const refusing = (how) =>
    fakeComponent((imports) => ({
      guardTools: () => [{ name: 'guard', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      agentCreated(agent) {
        imports['dsh:tool-restriction/host'].restrict(agent, ['read']);
        if (agent === 'main/worker') {
          if (how === 'refuses') throw { payload: { tag: 'host', val: 'no workers' } };
          throw new Error('boom');
        }
      },
    }));
  for (const [how, message] of [
    ['refuses', 'plugin `p` refused agent `main/worker`: the host refused: no workers'],
    ['traps', 'plugin `p` failed in agent-created: boom'],
  ]) {
    const s = shell();
    s.createAgent('worker', 'main');
    assert.throws(() => s.installPlugin('p', refusing(how), null), { message }, how);
    assert.deepEqual(s.plugins, [], how);
    assert.ok(!s.core.tools.some((t) => t.owner === 'p'), how);
    assert.equal(s.core.restriction('main', 'p'), undefined, how);
    s.installPlugin('p', fakeComponent(), null);
    assert.deepEqual(names(s.nextRequest('main/worker')), ['bash', 'read'], how);
  }
  // A trap in configure: the plugin is not installed, and says where it failed.
  const s = shell();
  assert.throws(() => s.installPlugin('trap', fakeComponent(() => ({ configure: () => { throw new Error('boom'); } })), null), {
    message: 'plugin `trap` failed in configure: boom',
  });
  assert.deepEqual(s.plugins, []);
});

test('a real component that grows its memory past 256 MiB in a call is quarantined after it', async () => {
  const s = shell();
  // 64 pages and 4,096 more: 260 MiB.
  s.installPlugin('greedy', await hostileComponent({ 'system-prompt': '(drop (memory.grow (i32.const 4096))) i32.const 1024' }), null);
  assert.deepEqual(s.systemPrompt('main'), []);
  assert.deepEqual(s.quarantined().map(String), [
    'plugin `greedy` is disabled: it failed in system-prompt (ran out of memory: it holds 272629760 bytes of linear memory (limit 268435456)); its restrictions and tools are lifted',
  ]);
  assert.deepEqual(names(s.nextRequest('main')), ['bash', 'read']);
  // Below the limit a plugin runs on.
  const t = shell();
  t.installPlugin('fine', await hostileComponent({ 'system-prompt': '(drop (memory.grow (i32.const 1024))) i32.const 1024' }), null);
  t.systemPrompt('main');
  assert.deepEqual(t.quarantined(), []);
});
