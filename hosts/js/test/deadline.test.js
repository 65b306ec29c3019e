// Every call into a plugin has a deadline, as in the Rust harness (50 ms, 2 s
// for the long calls): each instance runs on a thread of its own
// (plugin-thread.js), and a plugin still running at its deadline is stopped
// and quarantined as a trapping one is. The shell's own time, in the imports
// the plugin calls, is not charged to it; the whole call is bounded all the
// same, but for the group loader's runs (a server starting), which have a
// timeout of their own.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { DEFAULT_LIMITS, loadComponent } from '../src/component.js';
import { Tool, builtin, mcp } from '../src/tools.js';
import { hostileComponent } from './hostile-component.js';
import { names, shell } from './two-tools.js';

const component = await loadComponent();

/** Runs `fn`: its value and the milliseconds it took. */
function timed(fn) {
  const start = performance.now();
  const value = fn();
  return { value, ms: performance.now() - start };
}

/** Waits for `worker` to exit, failing after `ms`. */
async function exited(worker, ms = 5000) {
  const timeout = sleep(ms, undefined, { ref: false }).then(() => {
    throw new Error(`the worker still runs after ${ms}ms`);
  });
  await Promise.race([once(worker, 'exit'), timeout]);
}

/** Busy for `ms` milliseconds on the shell's thread. */
function busy(ms) {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Sleeps `ms` milliseconds on the shell's thread, as a shell waiting for a server to start does. */
function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** `hostile`, whose `log` import (in the shell) takes `ms` milliseconds each time, counted in `calls.log`. */
const slowLog = (hostile, ms, calls) => ({
  instantiate(imports) {
    const host = imports['dsh:tool-restriction/host'];
    const log = (level, message) => {
      calls.log += 1;
      busy(ms);
      host.log(level, message);
    };
    return hostile.instantiate({ ...imports, 'dsh:tool-restriction/host': { ...host, log } });
  },
  memoryBytes: (exports) => hostile.memoryBytes(exports),
});

test("the deadlines are the Rust harness's: 50 ms a call, 2 s a long call", () => {
  assert.deepEqual(DEFAULT_LIMITS, { call: 50, longCall: 2000 });
  assert.deepEqual(component.limits, DEFAULT_LIMITS);
});

test('a pre-execute that never ends is stopped at its deadline and quarantined; the shell and lazy-tools beside it go on', async () => {
  const s = shell();
  s.installPlugin('lazy-tools', component, { defer: ['bash'] });
  const spin = await hostileComponent({ 'pre-execute': '(loop (br 0)) i32.const 1024' });
  s.installPlugin('spin', spin, null);
  const thread = spin.threadOf(s.plugin('spin').instance.exports);
  const call = timed(() => s.call('main', 'read', {}));
  assert.equal(call.value.kind, 'completed');
  // Stopped at 50 ms of its own time, not much later (a loaded machine's wake-up aside).
  assert.ok(call.ms >= 50, `${call.ms} ms`);
  assert.ok(call.ms < 1000, `the call took ${call.ms} ms`);
  const [quarantine] = s.quarantined();
  assert.equal(s.quarantined().length, 1);
  assert.equal(quarantine.plugin, 'spin');
  assert.equal(quarantine.during, 'pre-execute');
  assert.match(quarantine.reason, /^ran out of time: still running after \d+ms \(limit 50ms\)$/);
  assert.match(String(quarantine), /^plugin `spin` is disabled: it failed in pre-execute \(ran out of time: .*\); its restrictions and tools are lifted$/);
  // Its thread is gone: the loop runs no more.
  await exited(thread.worker);
  // The shell goes on: lazy-tools still defers bash and decides its calls; spin is never called again.
  const request = names(s.nextRequest('main'));
  assert.ok(!request.includes('bash') && request.includes('read'), request.join(', '));
  for (const guard of s.plugin('lazy-tools').guards) assert.ok(request.includes(guard.name), `${guard.name} in ${request}`);
  assert.equal(s.call('main', 'bash', {}).kind, 'denied');
  assert.equal(s.call('main', 'read', {}).kind, 'completed');
  s.createAgent('worker', 'main');
  assert.ok(names(s.nextRequest('main/worker')).includes('read'));
  assert.deepEqual(s.quarantined().map((q) => q.plugin), ['spin']);
  // And the event loop turns.
  await sleep(1);
  s.close();
});

test('a long call gets the long deadline: a registry-changed that never ends is stopped at it', async () => {
  const s = shell();
  // A shorter long deadline, to keep the suite quick; the kind of call decides which one applies.
  const spin = (await hostileComponent({ 'registry-changed': '(loop (br 0)) i32.const 1024' })).withLimits({ longCall: 300 });
  s.installPlugin('spin', spin, null);
  const changed = timed(() => s.registerTools([new Tool('grep', '', builtin())]));
  assert.ok(changed.ms >= 300 && changed.ms < 1500, `${changed.ms} ms`);
  assert.deepEqual(s.quarantined().map((q) => [q.during, q.reason.replace(/after \d+ms/, 'after _ms')]), [
    ['registry-changed', 'ran out of time: still running after _ms (limit 300ms)'],
  ]);
  assert.deepEqual(names(s.nextRequest('main')), ['bash', 'read', 'grep']);
});

test("the time the shell spends in the imports a plugin calls is not charged to it", async () => {
  const calls = { log: 0 };
  // pre-execute calls the shell's `log` three times; each takes the shell 40 ms, 120 ms in all.
  const logCall = '(call $host:log (i32.const 2) (i32.const 0) (i32.const 0))';
  const hostile = await hostileComponent({ 'pre-execute': `${logCall} ${logCall} ${logCall} i32.const 1024` });
  const s = shell();
  s.installPlugin('patient', slowLog(hostile, 40, calls), null);
  const call = timed(() => s.call('main', 'read', {}));
  assert.equal(call.value.kind, 'completed');
  assert.equal(calls.log, 3);
  assert.ok(call.ms >= 120, `${call.ms} ms`);
  assert.deepEqual(s.quarantined(), []);
  assert.equal(s.plugin('patient').instance.logs.length, 3);
  // Its own time between the imports still counts: one that calls a quick import for ever is
  // stopped at its own limit, long before the bound on the whole call (below).
  const looping = await hostileComponent({ 'pre-execute': `(loop ${logCall} (br 0)) i32.const 1024` });
  const t = shell();
  const counted = { log: 0 };
  t.installPlugin('chatty', slowLog(looping, 0, counted), null);
  const stopped = timed(() => t.call('main', 'read', {}));
  assert.equal(stopped.value.kind, 'completed');
  assert.deepEqual(t.quarantined().map((q) => q.during), ['pre-execute']);
  assert.match(t.quarantined()[0].reason, /^ran out of time: still running after \d+ms \(limit 50ms\)$/);
  assert.ok(counted.log > 50, `${counted.log} imports`);
  assert.ok(stopped.ms < 500, `${stopped.ms} ms for ${counted.log} imports`);
  s.close();
});

test('a plugin that calls a slow import in a loop is stopped at ten times its limit, imports included', async () => {
  const logCall = '(call $host:log (i32.const 2) (i32.const 0) (i32.const 0))';
  const hostile = await hostileComponent({ 'pre-execute': `(loop ${logCall} (br 0)) i32.const 1024` });
  const s = shell();
  const calls = { log: 0 };
  // Each import takes the shell 20 ms: the plugin's own 50 ms would take minutes to spend.
  s.installPlugin('patient', slowLog(hostile, 20, calls), null);
  const stopped = timed(() => s.call('main', 'read', {}));
  assert.equal(stopped.value.kind, 'completed');
  assert.deepEqual(s.quarantined().map((q) => q.during), ['pre-execute']);
  assert.match(
    s.quarantined()[0].reason,
    /^ran out of time: still running \d+ms after the call began, \d+ms of it in the shell's imports \(limit 50ms of its own, 500ms in all\)$/,
  );
  assert.ok(stopped.ms >= 500, `${stopped.ms} ms`);
  assert.ok(stopped.ms < 2000, `${stopped.ms} ms`);
  s.close();
});

test("the group loader's time is left out of a call's whole-time bound; the shell's other time in load-group is not", () => {
  // A server that takes longer to start than a plugin call may take in all
  // must not get the plugin that asked for it stopped: the loader has a
  // timeout of its own (core.js's `loaderMs`, plugin-thread.js's `LOADER_MS`).
  // Long calls get 500 ms here, so a call is bounded at 5 s in all; the real
  // lazy-tools loads group `db` in execute (`load_tools`), through the
  // shell's `load-group` import. (At 200 ms, the real plugin's own configure
  // could run out of time on a loaded machine.)
  const lazyTools = component.withLimits({ longCall: 500 });
  const SLOW_MS = 5500;
  const db = (s, loaderMs) =>
    s.setLazyGroups([{ name: 'db', description: 'A SQL database.', toolNames: ['db__query'] }], () => {
      sleepSync(loaderMs);
      return [new Tool('db__query', 'Run a SQL query.', mcp('db'))];
    });
  const s = shell();
  db(s, SLOW_MS);
  s.installPlugin('lazy-tools', lazyTools, { defer: ['db__*'] });
  const load = timed(() => s.call('main', 'load_tools', { group_id: 'db' }));
  assert.ok(load.ms >= SLOW_MS, `${load.ms} ms`);
  assert.deepEqual(s.quarantined(), []);
  assert.equal(load.value.kind, 'completed');
  assert.deepEqual(load.value.json.tool_names, ['db__query']);
  assert.ok(names(s.nextRequest('main')).includes('db__query'));
  s.close();
  // The same time spent by the shell in `load-group` but outside the loader
  // (here before it runs; in the Rust harness, refusing loads in a loop) is
  // bounded as any import's: the plugin is stopped at 5 s.
  const slowImport = {
    instantiate(imports) {
      const host = imports['dsh:tool-restriction/host'];
      const loadGroup = (...args) => (sleepSync(SLOW_MS), host.loadGroup(...args));
      return lazyTools.instantiate({ ...imports, 'dsh:tool-restriction/host': { ...host, loadGroup } });
    },
    memoryBytes: (exports) => lazyTools.memoryBytes(exports),
  };
  const t = shell();
  db(t, 0);
  t.installPlugin('lazy-tools', slowImport, { defer: ['db__*'] });
  assert.equal(t.call('main', 'load_tools', { group_id: 'db' }).kind, 'refused');
  assert.deepEqual(t.quarantined().map((q) => q.during), ['execute']);
  assert.match(
    t.quarantined()[0].reason,
    /^ran out of time: still running \d+ms after the call began, \d+ms of it in the shell's imports \(limit 500ms of its own, 5000ms in all\)$/,
  );
  t.close();
});

test('a plugin whose start never ends is not installed, and leaves nothing behind', async () => {
  // What the component runs as jco instantiates it: under the long deadline.
  const s = shell();
  const stuck = (await hostileComponent({ _initialize: '(loop (br 0))' })).withLimits({ longCall: 200 });
  const install = timed(() => assert.throws(() => s.installPlugin('stuck', stuck, null), { message: /^ran out of time: still running after \d+ms \(limit 200ms\)$/ }));
  assert.ok(install.ms < 5000, `${install.ms} ms`);
  assert.deepEqual(s.plugins, []);
  assert.deepEqual(names(s.nextRequest('main')), ['bash', 'read']);
});

test("a released instance's thread serves the component's next instance; a stopped one never does", async () => {
  const s = shell();
  s.installPlugin('lazy-tools', component, null);
  const thread = component.threadOf(s.plugin('lazy-tools').instance.exports);
  s.disposePlugin('lazy-tools');
  assert.equal(thread.stopped, 'the instance was released');
  assert.throws(() => thread.call('visibleTools', ['main']), { message: /the plugin's thread is stopped/ });
  // The next instances work as new ones.
  for (let i = 0; i < 3; i++) {
    const t = shell();
    t.installPlugin('lazy-tools', component, { defer: ['bash'] });
    assert.ok(!names(t.nextRequest('main')).includes('bash'));
    assert.equal(t.call('main', 'bash', {}).kind, 'denied');
    t.close();
  }
});
