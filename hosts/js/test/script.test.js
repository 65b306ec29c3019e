// The script runner itself: it must fail a case whose expectation the
// component does not meet, at the step's line, and refuse unknown keys.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { parseJsonFile } from '../src/bounded.js';
import { loadComponent } from '../src/component.js';
import { LocatedValue } from '../src/located-yaml.js';
import { describe, jsonSubset, loadScript, parseScript, runCase, runStep } from '../src/script.js';
import { Shell } from '../src/shell.js';
import { fakeComponent } from './fake-plugin.js';
import { shell as twoTools } from './two-tools.js';

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

test("a script's keys, steps, outcomes and aliases are shown escaped in its errors", async () => {
  const { LocatedValue, renderConfigErrors } = await import('../src/located-yaml.js');
  assert.throws(() => parseScript('s.yml', 'steps:\n  - visible: {agent: main, "\\e]0;owned\\a": 1}\n'), {
    message: 's.yml:2:28: visible: unknown field `\\u{1b}]0;owned\\u{7}`, expected one of `agent`, `exactly`, `includes`, `excludes`',
  });
  assert.throws(() => parseScript('s.yml', 'steps:\n  - "\\e[2J": 1\n'), { message: 's.yml:2:5: unknown step `\\u{1b}[2J`' });
  assert.throws(() => parseScript('s.yml', 'steps:\n  - call: {agent: main, tool: x, expect: {outcome: "\\e[31mred"}}\n'), {
    message: 's.yml:2:43: unknown outcome `\\u{1b}[31mred`, expected one of denied, refused, ok, error',
  });
  // A key holding `/` is found at its own line, not its mapping's.
  assert.throws(() => parseScript('s.yml', 'steps:\n  - visible:\n      agent: main\n      a/b: 1\n'), {
    message: 's.yml:4:7: visible: unknown field `a/b`, expected one of `agent`, `exactly`, `includes`, `excludes`',
  });
  assert.throws(() => LocatedValue.parse('p.yml', 'a: *x\u202eyz\n'), { message: 'p.yml:1:4: alias `x\\u{202e}yz` does not resolve' });
  const config = LocatedValue.parse('profile.yml', 'defer: [x]\n');
  assert.equal(
    renderConfigErrors(config, [{ pointer: '/defer/0', message: 'unknown tool `x\u001b[2J`\nforged: ok' }]),
    'profile.yml:1:9: unknown tool `x\\u{1b}[2J`\\nforged: ok',
  );
});

test("a plugin's deny reason or result text is shown escaped in a step's line and its failure", () => {
  const s = twoTools();
  s.installPlugin('p', fakeComponent(() => ({ preExecute: () => ({ tag: 'deny', val: 'no\r\u001b[2K\u001b]0;owned\u0007forged: ok' }) })), null);
  const step = { kind: 'call', agent: 'main', tool: 'bash', args: {}, expect: { outcome: 'ok', reasonContains: [], textContains: [] } };
  assert.throws(() => runStep(s, 'p', step), {
    message: 'main calling `bash`: denied by p: no\\r\\u{1b}[2K\\u{1b}]0;owned\\u{7}forged: ok: expected ok, got denied',
  });
  assert.equal(
    describe({ kind: 'completed', isError: true, text: 'line one\nline \u009b2J two\u202e' }),
    'error: line one | line \\u{9b}2J two\\u{202e}',
  );
  assert.equal(describe({ kind: 'refused', reason: 'unknown tool `x\u001b[2J`' }), 'refused: unknown tool `x\\u{1b}[2J`');
});

test('a script that is not a regular file (a FIFO, /dev/zero) is refused at once, without reading it', async () => {
  const { spawnSync } = await import('node:child_process');
  const dir = mkdtempSync(join(tmpdir(), 'js-host-fifo-'));
  try {
    assert.equal(spawnSync('mkfifo', [join(dir, 'case.yml')]).status, 0);
    for (const path of ['/dev/zero', join(dir, 'case.yml'), dir]) {
      // In a process of its own: before, /dev/zero ran it out of memory and a FIFO hung it.
      const run = spawnSync(
        process.execPath,
        ['--input-type=module', '-e',
          `import { loadScript } from '${new URL('../src/script.js', import.meta.url)}';
           try { loadScript(${JSON.stringify(path)}); } catch (e) { console.log(e.message); }`],
        { timeout: 20_000, encoding: 'utf8' },
      );
      assert.equal(run.stdout.trim(), `reading ${path}: not a regular file; a YAML file here must be one`, `${path}: ${run.signal ?? run.status}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a script, profile or catalog that is not UTF-8, too large or not JSON is refused, saying where', () => {
  withCase({}, (dir) => {
    writeFileSync(join(dir, 'case.yml'), Buffer.concat([Buffer.from('tools:\n  - [ba'), Buffer.from([0xff]), Buffer.from('sh]\n')]));
    assert.throws(() => loadScript(join(dir, 'case.yml')), { message: `${join(dir, 'case.yml')}:2:8: not UTF-8 text (byte 14)` });
    writeFileSync(join(dir, 'case.yml'), `# ${'x'.repeat(8 << 20)}\n`);
    assert.throws(() => loadScript(join(dir, 'case.yml')), {
      message: `reading ${join(dir, 'case.yml')}: the file is larger than 8 MiB, the most a YAML file here may have`,
    });
  });
  const files = { 'case.yml': 'catalog: catalog.json\nagents: [main]\n', 'catalog.json': '{"servers": [\n  {"name": "gh", "tools": [}\n]}\n' };
  withCase(files, (dir) => {
    assert.throws(() => runCase(dir, component, () => new Shell()), {
      message: `${join(dir, 'catalog.json')}:2:28: the catalog is not JSON here: expected a value, found \`}\``,
    });
  });
  withCase({ ...files, 'catalog.json': '{"servers": [{"name": "gh\u001b[2J\u0001", "tools": []}]}' }, (dir) => {
    assert.throws(() => runCase(dir, component, () => new Shell()), (e) => {
      assert.equal(e.message, `${join(dir, 'catalog.json')}:1:26: the catalog is not JSON here: expected the rest of a string (a control character or a bad escape is in it, or it never ends), found \`\\u{1b}\``);
      return true;
    });
  });
});

test('a column counts characters, an emoji one, as the Rust harness counts it', () => {
  // `😀` is two UTF-16 units and one character.
  assert.throws(() => LocatedValue.parse('p.yml', '😀: *nope\n'), { message: 'p.yml:1:4: alias `nope` does not resolve' });
  // A byte-order mark (an editor's) is no column, in YAML as in JSON.
  assert.throws(() => LocatedValue.parse('p.yml', '\ufeffa: *nope\n'), { message: 'p.yml:1:4: alias `nope` does not resolve' });
  assert.throws(() => parseJsonFile('c.json', '\ufeff{"a": }', 'the catalog'), {
    message: 'c.json:1:7: the catalog is not JSON here: expected a value, found `}`',
  });
  // At the end of the text, the place just past it (the Rust harness's too).
  assert.throws(() => parseJsonFile('c.json', '{"a": 1,\n', 'the catalog'), { message: /^c\.json:2:1: / });
  assert.throws(() => parseJsonFile('c.json', '{"😀": }', 'the catalog'), {
    message: 'c.json:1:7: the catalog is not JSON here: expected a value, found `}`',
  });
  assert.throws(() => parseJsonFile('c.json', '{"a": 1,\n "😀😀": 1, "😀😀": 2}', 'the catalog'), {
    message: 'c.json:2:11: the catalog names the key `😀😀` twice in one object (only one can be meant)',
  });
  withCase({}, (dir) => {
    writeFileSync(join(dir, 'case.yml'), Buffer.concat([Buffer.from('# 😀'), Buffer.from([0xff])]));
    assert.throws(() => loadScript(join(dir, 'case.yml')), { message: `${join(dir, 'case.yml')}:1:4: not UTF-8 text (byte 6)` });
  });
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
