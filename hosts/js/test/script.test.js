// The script runner itself: it must fail a case whose expectation the
// component does not meet, at the step's line, and refuse unknown keys.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadComponent } from '../src/component.js';
import { jsonSubset, parseScript, runCase } from '../src/script.js';
import { Shell } from '../src/shell.js';

const component = await loadComponent();

function withCase(files, fn) {
  const dir = mkdtempSync(join(tmpdir(), 'js-host-case-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// With no config the zero-config preset decides by budget, so a small
// registry shows everything but the shipped alwaysDefer (browser tools).
const CASE = `tools: [bash, {name: playwright__browser_click, server: playwright}]
agents: [main]
steps:
  - visible: {agent: main, exactly: [bash, tool_search, defer_execute_tool, load_tools]}
  - call: {agent: main, tool: playwright__browser_click, expect: {outcome: OUTCOME}}
`;

test('a met expectation passes and a wrong one fails at its line', () => {
  const passed = withCase({ 'case.yml': CASE.replace('OUTCOME', 'denied') }, (dir) =>
    runCase(dir, component, () => new Shell()),
  );
  assert.equal(passed.transcript.length, 2);
  assert.match(passed.transcript[1], /main calls playwright__browser_click: denied by lazy-tools: /);

  withCase({ 'case.yml': CASE.replace('OUTCOME', 'ok') }, (dir) => {
    assert.throws(() => runCase(dir, component, () => new Shell()), {
      message: /^case\.yml:5: step 2 failed: main calling `playwright__browser_click`: denied by lazy-tools: .*expected ok, got denied$/s,
    });
  });
});

test('a config the plugin rejects must match error.txt exactly', () => {
  const files = { 'case.yml': 'tools: [bash]\nagents: [main]\n', 'profile.yml': 'defer: ["Defer()"]\n' };
  withCase({ ...files, 'error.txt': 'profile.yml:1:9: `Defer()` has no pattern inside the parentheses\n' }, (dir) => {
    runCase(dir, component, () => new Shell());
  });
  withCase({ ...files, 'error.txt': 'profile.yml:1:8: something else\n' }, (dir) => {
    assert.throws(() => runCase(dir, component, () => new Shell()), /config errors differ/);
  });
  withCase(files, (dir) => {
    assert.throws(() => runCase(dir, component, () => new Shell()), /rejected its config:\n {2}\/defer\/0: /);
  });
});

test('unknown keys in a script are errors at their place', () => {
  assert.throws(() => parseScript('case.yml', 'tools: [bash]\nsteps:\n  - visibel: {agent: main}\n'), {
    message: /^case\.yml:3:5: unknown step `visibel`$/,
  });
  assert.throws(
    () => parseScript('case.yml', 'steps:\n  - call: {agent: main, tool: x, expect: {outcome: ok, jsn: {}}}\n'),
    { message: /^case\.yml:2:56: expect: unknown field `jsn`/ },
  );
});

test('json subsets compare keys given and whole lists', () => {
  const actual = { a: 1, b: [{ x: 1, y: 2 }], c: 'z' };
  assert.equal(jsonSubset({ a: 1 }, actual, ''), undefined);
  assert.equal(jsonSubset({ b: [{ x: 1 }] }, actual, ''), undefined);
  assert.equal(jsonSubset({ b: [] }, actual, ''), '/b (length 1 != 0)');
  assert.equal(jsonSubset({ b: [{ x: 2 }] }, actual, ''), '/b/0/x');
  assert.equal(jsonSubset({ d: 1 }, actual, ''), '/d');
});

test('a lazy group that lists a tool already registered with another description keeps that tool and loads the rest', () => {
  const files = {
    'case.yml': `# The shell registered db__query from a cached listing; the server, once started, describes it anew.
tools: [bash, {name: db__query, server: db, description: Run a SQL query (cached listing).}]
agents: [main]
lazy_groups:
  - name: db
    description: A SQL database.
    tools:
      - {name: db__query, server: db, description: Run a SQL query.}
      - {name: db__tables, server: db, description: List the tables.}
steps:
  - call: {agent: main, tool: load_tools, args: {group_id: db}, expect: {outcome: ok}}
  - call: {agent: main, tool: db__tables, expect: {outcome: ok}}
`,
    'profile.yml': 'strategy: dispatch\ndefer: ["db__*"]\n',
  };
  let shell;
  withCase(files, (dir) => runCase(dir, component, () => (shell = new Shell())));
  const db = shell.core.tools.filter((t) => t.origin.val === 'db').map((t) => `${t.name}: ${t.description}`);
  assert.deepEqual(db, ['db__query: Run a SQL query (cached listing).', 'db__tables: List the tables.']);
});
