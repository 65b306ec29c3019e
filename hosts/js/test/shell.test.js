// The shell's own rules, without a plugin: scopes, restriction layers along
// the chain, the pre-execute waterfall, config errors at their YAML place.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ShellCore } from '../src/core.js';
import { LocatedValue, renderConfigErrors } from '../src/located-yaml.js';
import { MAX_SHELL_NAME_CHARS, Shell, catalogTools, shellName } from '../src/shell.js';
import { json } from '../src/terminal.js';
import { Tool, builtin, ofAgent } from '../src/tools.js';

const names = (tools) => tools.map((t) => t.name);

function core() {
  const core = new ShellCore();
  for (const name of ['read', 'bash', 'gh_issue']) core.register(new Tool(name, '', builtin()));
  core.createAgent('main');
  core.createAgent('main/worker', 'main');
  return core;
}

test('restrictions mask inherited tools only', () => {
  const c = core();
  c.register(new Tool('mine', '', ofAgent('main')));
  c.restrict('main', 'p', ['read']);
  assert.deepEqual(names(c.effective('main')), ['read', 'mine']);
  assert.deepEqual(names(c.effective('main', 'p')), ['read', 'bash', 'gh_issue', 'mine']);
});

test('restrictions intersect along the chain', () => {
  const c = core();
  c.restrict('main', 'profile', ['read', 'bash']);
  c.restrict('main/worker', 'p', ['bash', 'gh_issue']);
  assert.deepEqual(names(c.effective('main/worker')), ['bash']);
  // Ignoring the worker's own layer never reaches past its parent's.
  assert.deepEqual(names(c.effective('main/worker', 'p')), ['read', 'bash']);
});

test('a lazy group loads for an agent whose restrictions allow one of its tools, as in the Rust harness', () => {
  const c = core();
  const declare = (name, toolNames) => c.lazyGroups.set(name, { decl: { name, description: '', toolNames }, loads: 0 });
  declare('gh', ['gh_issue', 'gh_pr']);
  declare('unlisted', []);
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'gh'));
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'unlisted'));
  // The asking plugin's own layer on the agent is what the load changes.
  c.restrict('main/worker', 'lazy-tools', ['read']);
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'gh'));
  // Another source's layer, on the agent or its parent, counts.
  c.restrict('main', 'parent', ['read']);
  assert.ok(!c.mayLoadGroup('main/worker', 'lazy-tools', 'gh'));
  assert.ok(!c.mayLoadGroup('main', 'lazy-tools', 'gh'));
  assert.ok(!c.mayLoadGroup('main/worker', 'lazy-tools', 'unlisted'));
  c.restrict('main', 'parent', ['gh_issue']);
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'gh'));
  c.restrict('main/worker', 'policy', ['bash']);
  assert.ok(!c.mayLoadGroup('main/worker', 'lazy-tools', 'gh'));
  assert.ok(c.mayLoadGroup('main', 'lazy-tools', 'gh'));
  // An unknown group is for the load to report; an unknown agent is an error.
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'nope'));
  assert.throws(() => c.mayLoadGroup('ghost', 'lazy-tools', 'gh'), /unknown agent/);
});

test('once loaded, a lazy group is judged by the tools it registered, as in the Rust harness', () => {
  const c = core();
  c.lazyGroups.set('db', { decl: { name: 'db', description: '', toolNames: [] }, loads: 0 });
  c.groupLoader = () => [new Tool('db_query', '', builtin())];
  // Declaring no tools, it is refused to a restricted chain: a restriction names registered tools only.
  c.restrict('main', 'parent', ['read']);
  assert.ok(!c.mayLoadGroup('main/worker', 'lazy-tools', 'db'));
  c.loadGroup('db');
  assert.ok(!c.mayLoadGroup('main/worker', 'lazy-tools', 'db'));
  c.restrict('main', 'parent', ['db_query']);
  assert.ok(c.mayLoadGroup('main/worker', 'lazy-tools', 'db'));
});

test('a nearer scope shadows a farther tool of the same name', () => {
  const c = core();
  c.register(new Tool('bash', 'the worker bash', ofAgent('main/worker')));
  assert.deepEqual(names(c.effective('main/worker')), ['read', 'gh_issue', 'bash']);
  assert.equal(c.resolve('main/worker', 'bash').description, 'the worker bash');
  assert.equal(c.resolve('main', 'bash').description, '');
});

test('exposure layers apply to their agent only; restrictions are inherited', () => {
  const c = core();
  c.expose('main', 'p', ['read']);
  assert.deepEqual(names(c.effective('main')), ['read']);
  assert.deepEqual(names(c.effective('main', 'p')), ['read', 'bash', 'gh_issue']);
  // The child sees what its chain authorizes, not what main exposes.
  assert.deepEqual(names(c.effective('main/worker')), ['read', 'bash', 'gh_issue']);
  // A restriction on main is still inherited.
  c.restrict('main', 'q', ['read', 'bash']);
  assert.deepEqual(names(c.effective('main/worker')), ['read', 'bash']);
  assert.throws(() => c.expose('main', 'p', ['nope']), { message: 'cannot restrict `main`: unknown tool `nope`' });
  c.liftAll('p');
  assert.equal(c.exposure('main', 'p'), undefined);
});

test('a tool name has one owner: a plugin cannot take a shell tool\'s name', () => {
  const c = core();
  assert.throws(() => c.register(new Tool('bash', '', ofAgent('main'), undefined, 'p')), {
    message: 'the name `bash` is taken by a built-in tool: a tool cannot take another\'s name',
  });
  c.register(new Tool('guard', '', ofAgent('main'), undefined, 'p'));
  // The same owner may hold the name in another scope.
  c.register(new Tool('guard', '', ofAgent('main/worker'), undefined, 'p'));
  assert.throws(() => c.register(new Tool('guard', '', builtin())), {
    message: 'the name `guard` is taken by plugin `p`: a tool cannot take another\'s name',
  });
});

test('restricting with an unknown name is an error and installs nothing', () => {
  const c = core();
  assert.throws(() => c.restrict('main', 'p', ['read', 'nope']), {
    message: 'cannot restrict `main`: unknown tool `nope`',
  });
  assert.equal(c.restriction('main', 'p'), undefined);
});

test('disposing an agent removes its subtree, deepest first, with its scope', () => {
  const c = core();
  c.register(new Tool('w', '', ofAgent('main/worker')));
  assert.deepEqual(c.disposeAgent('main'), ['main/worker', 'main']);
  assert.ok(!c.tools.some((t) => t.name === 'w'));
});

test('every change to what an agent may call bumps the generation', () => {
  const c = core();
  let last = c.generation;
  const bumped = () => {
    const changed = c.generation > last;
    last = c.generation;
    return changed;
  };
  c.register(new Tool('x', '', builtin()));
  assert.ok(bumped());
  c.restrict('main', 'p', ['x']);
  assert.ok(bumped());
  c.restrict('main', 'p', null);
  assert.ok(bumped());
  c.unregister('x');
  assert.ok(bumped());
  c.createAgent('main/other', 'main');
  assert.ok(bumped());
});

test('bad agent names and duplicate tools are refused with the reason', () => {
  const c = core();
  assert.throws(() => c.createAgent('main/a b', 'main'), /invalid agent name `main\/a b`/);
  assert.throws(() => c.register(new Tool('read', '', builtin())), {
    message: 'a tool named `read` is already registered in the global scope',
  });
});

test('the waterfall: a native hook denies first; an unknown tool is refused', () => {
  const shell = new Shell();
  shell.registerTools([new Tool('bash', '', builtin()), new Tool('read', '', builtin())]);
  shell.createAgent('main');
  shell.addPreExecuteHook('guard', (_agent, tool) =>
    tool === 'bash' ? { tag: 'deny', val: 'no shell' } : { tag: 'pass' },
  );
  assert.deepEqual(shell.call('main', 'bash', {}), { kind: 'denied', by: 'guard', reason: 'no shell' });
  assert.equal(shell.call('main', 'read', { path: '/x' }).kind, 'completed');
  assert.deepEqual(shell.call('main', 'nope', {}), { kind: 'refused', reason: 'unknown tool `nope`' });
  shell.restrict('main', 'profile', ['bash']);
  assert.deepEqual(shell.call('main', 'read', {}), {
    kind: 'refused',
    reason: 'tool `read` is not available to agent `main`',
  });
});

test('config errors are shown at the YAML place their pointer names, in file order', () => {
  const config = LocatedValue.parse(
    'profile.yml',
    'noDefer: [a, "NoDefer(b)"]\ndefer:\n  - x\n  - ""\nfamilies:\n  web: {members: [w]}\n',
  );
  const rendered = renderConfigErrors(config, [
    { pointer: '/defer/1', message: 'blank' },
    { pointer: '/noDefer/1', message: 'nested' },
    { pointer: '/families/web/core', message: 'needs core' },
    { pointer: '/tokenBudget', message: 'falls back to the root' },
  ]);
  assert.equal(
    rendered,
    [
      'profile.yml:1:1: falls back to the root',
      'profile.yml:1:14: nested',
      'profile.yml:4:5: blank',
      'profile.yml:6:3: needs core',
    ].join('\n'),
  );
});

test('YAML 1.2 booleans: a tool named `no` stays a string', () => {
  assert.deepEqual(LocatedValue.parse('p.yml', 'defer: [no, on, y, true]').value, {
    defer: ['no', 'on', 'y', true],
  });
});

test('a YAML key is kept as written: `__proto__` stays a key, two keys of one JSON form are a duplicate at their line', () => {
  const profile = LocatedValue.parse('profile.yml', 'defer: [gh__*]\n__proto__:\n  defer: [bash]\n');
  // The plugin gets the key, and can say it does not know it.
  assert.equal(JSON.stringify(profile.value), '{"defer":["gh__*"],"__proto__":{"defer":["bash"]}}');
  assert.deepEqual(Object.keys(profile.value), ['defer', '__proto__']);
  assert.deepEqual(profile.place('/__proto__/defer/0'), { file: 'profile.yml', line: 3, column: 11 });
  for (const [text, key] of [['1: a\n"1": b\n', '1'], ['~: a\n"null": b\n', 'null'], ['true: a\n"true": b\n', 'true'], ['a: 1\na: 2\n', 'a']]) {
    assert.throws(() => LocatedValue.parse('p.yml', text), { message: `p.yml:2:1: duplicate key \`${key}\`` });
  }
  assert.throws(() => LocatedValue.parse('p.yml', 'a: 1\n"k\\e[2J": 1\nk\u001b[2J: 2\n'), { message: /^p\.yml:\d+:\d+: .*\\u\{1b\}/ });
});

test('a large YAML mapping reads in linear time, as in the Rust harness', () => {
  // The yaml library's own duplicate check compares every key with every other: 60,000 keys
  // took about 40 s, 125,000 keys nearly 3 minutes.
  const text = Array.from({ length: 60_000 }, (_, i) => `tool_${String(i).padStart(6, '0')}: allowed\n`).join('');
  const started = performance.now();
  assert.equal(Object.keys(LocatedValue.parse('big.yml', text).value).length, 60_000);
  const ms = performance.now() - started;
  assert.ok(ms < 5000, `${Math.round(ms)} ms`);
});

test('a YAML number JSON cannot hold exactly is refused at its line, not rounded or made null', () => {
  for (const [text, message] of [
    ['a: .inf\n', 'p.yml:1:4: the number .inf has no JSON form; write it in quotes to pass it as text'],
    ['a: [1, -.Inf]\n', 'p.yml:1:8: the number -.Inf has no JSON form; write it in quotes to pass it as text'],
    ['a: .nan\n', 'p.yml:1:4: the number .nan has no JSON form; write it in quotes to pass it as text'],
    [
      'a:\n  b: 12345678901234567890\n',
      'p.yml:2:6: the number 12345678901234567890 is an integer too large to be read exactly (past 2^53); write it in quotes to pass it as text',
    ],
  ]) {
    assert.throws(() => LocatedValue.parse('p.yml', text), { message });
  }
  assert.deepEqual(LocatedValue.parse('p.yml', 'a: [9007199254740991, -9007199254740991, 1.5, 0x10, 1e300, "12345678901234567890"]\n').value, {
    a: [9007199254740991, -9007199254740991, 1.5, 16, 1e300, '12345678901234567890'],
  });
});

test('a script field `__proto__` is an unknown field, not a way around the field check', async () => {
  const { parseScript } = await import('../src/script.js');
  assert.throws(() => parseScript('s.yml', 'steps:\n  - visible:\n      __proto__: {agent: main, bogus: 1}\n'), {
    message: 's.yml:3:7: visible: unknown field `__proto__`, expected one of `agent`, `exactly`, `includes`, `excludes`',
  });
  assert.throws(() => parseScript('s.yml', '__proto__: {steps: 5}\nsteps: []\n'), {
    message: 's.yml:1:1: script: unknown field `__proto__`, expected one of `catalog`, `tools`, `agents`, `lazy_groups`, `steps`',
  });
});

test('a YAML syntax error is located', () => {
  assert.throws(() => LocatedValue.parse('p.yml', 'defer: [a\nb: c: d\n'), /^YamlError: p\.yml:\d+:\d+: /);
});

test('tools whose names clean alike keep a name each; a tool listed twice is an error', () => {
  const catalog = (tools, more = []) => ({
    servers: [{ name: 'Weather API', tools }, ...more],
  });
  const alike = catalogTools(
    catalog([{ name: 'get.forecast' }, { name: 'get-forecast' }], [
      { name: 'Weather-API', tools: [{ name: 'get forecast' }] },
    ]),
  );
  assert.deepEqual(names(alike), [
    'Weather-API__get-forecast',
    'Weather-API__get-forecast-2',
    'Weather-API__get-forecast-3',
  ]);
  assert.throws(
    () => catalogTools(catalog([{ name: 't' }, { name: 't' }])),
    { message: '/servers/0/tools/1: tool `t` of server `Weather API` is listed twice (first at /servers/0/tools/0)' },
  );
  assert.throws(() => catalogTools(catalog([{ name: '' }])), {
    message: '/servers/0/tools/0: a tool of server `Weather API` has an empty name',
  });
});

test('names that clean alike take the first suffix free, as in the Rust harness', () => {
  const alike = catalogTools({
    servers: [{ name: 's', tools: ['t.x', 't-x', 't-x-3', 't x', 't/x'].map((name) => ({ name })) }],
  });
  assert.deepEqual(names(alike), ['s__t-x', 's__t-x-2', 's__t-x-3', 's__t-x-4', 's__t-x-5']);
  const many = catalogTools({
    servers: [{ name: 's', tools: Array.from({ length: 3000 }, (_, i) => ({ name: `t${String.fromCharCode(0x4e00 + i)}` })) }],
  });
  assert.equal(many[2999].name, 's__t--3000');
  assert.equal(new Set(names(many)).size, 3000);
  // Names of the longest length that differ only where a suffix cuts them share its stem.
  const long = 'y'.repeat(MAX_SHELL_NAME_CHARS - 's__y-'.length - 3);
  const pairs = catalogTools({
    servers: [
      {
        name: 's',
        tools: Array.from({ length: 1000 }, (_, i) => `y-${long}${String(i).padStart(3, '0')}`).flatMap((name) => [
          { name },
          { name: name.replace('-', '.') },
        ]),
      },
    ],
  });
  assert.equal(new Set(names(pairs)).size, 2000);
  assert.ok(pairs.every((t) => t.name.length <= MAX_SHELL_NAME_CHARS));
  // A stem that is one name's whole and another's cut, while the suffix grows to two digits:
  // the shorter name still takes `-2`, as in the Rust harness.
  const y = 'y'.repeat(248);
  const grown = catalogTools({
    servers: [
      {
        name: 's',
        tools: [...'-.!@#$%^&*'].map((c) => ({ name: `x${c}${y}zzz` })).concat([{ name: `x-${y}` }, { name: `x.${y}` }]),
      },
    ],
  });
  assert.ok(grown[9].name.endsWith('-10'), grown[9].name);
  assert.ok(grown[11].name.endsWith('y-2'), grown[11].name);
});

test('a key is a misspelling one edit away, not when it only begins alike, as in the Rust harness', () => {
  // The same table as TOOL_KEY_TYPOS in host-harness/src/catalog.rs.
  const typos = [
    ['descripton', 'description'],
    ['dscription', 'description'],
    ['discription', 'description'],
    ['descriptions', 'description'],
    ['Description', 'description'],
    ['input_schema', 'inputSchema'],
    ['inputshema', 'inputSchema'],
    ['inputSchemas', 'inputSchema'],
    ['nmae', 'name'],
    ['naem', 'name'],
    ['nam', 'name'],
    ['names', 'name'],
    ['lazy-tools', 'x-lazy-tools'],
    ['x_lazy_tools', 'x-lazy-tools'],
    ['namespace', null],
    ['description_zh', null],
    ['descr', null],
    ['input', null],
    ['schema', null],
    ['method', null],
    ['url', null],
    ['params', null],
    ['category', null],
    // Separators past a few make no slip of the keyboard (and are not quoted back whole).
    ['d_e_s_c_r_i_p_t_o_n', null],
    ['-_-_-_name', null],
    ['input__schema', 'inputSchema'],
  ];
  for (const [key, near] of typos) {
    const catalog = { servers: [{ name: 's', tools: [{ name: 't', [key]: 1 }] }] };
    if (near === null) {
      assert.deepEqual(names(catalogTools(catalog)), ['s__t'], key);
    } else {
      const said = `unknown key \`${key}\` in a tool: did you mean \`${near}\`?`;
      assert.throws(() => catalogTools(catalog), (err) => err.message.includes(said), key);
    }
  }
});

test('a long key nothing reads is passed over without measuring its distance to every key the shell reads', () => {
  // The distance's table was as large as the two lengths' product: a 5 MB key, 2.4 GB.
  const long = `description${'x'.repeat(5 << 20)}`;
  const started = performance.now();
  const tools = catalogTools({ servers: [{ name: 's', tools: [{ name: 't', [long]: 1 }] }] });
  assert.deepEqual(names(tools), ['s__t']);
  assert.ok(performance.now() - started < 2000);
  // One character more or less, or one astral character in place of another, is still one edit.
  for (const key of ['descriptio', 'descriptionn', 'descriptio\u{1f600}']) {
    assert.throws(() => catalogTools({ servers: [{ name: 's', tools: [{ name: 't', [key]: 1 }] }] }), /did you mean `description`\?/, key);
  }
});

test('a server, tool or search text written as an array, or a list that is not one, is an error at its place', () => {
  const cases = [
    [[], '/: the catalog is a JSON object with named keys; this is an array'],
    [{}, '/servers: missing; a catalog lists its servers there'],
    [{ servers: {} }, '/servers: a list, [...]; this is an object'],
    // As the Rust harness: a server with no `tools` is a mistake, not an empty server.
    [{ servers: [{ name: 'fs' }] }, '/servers/0/tools: missing; a server lists its tools there (`[]` for none)'],
    [{ servers: [['fs', '', null, [{ name: 'read' }]]] }, '/servers/0: a server is a JSON object with named keys; this is an array'],
    [{ servers: [{ name: 'fs', tools: [['read', 'Reads.']] }] }, '/servers/0/tools/0: a tool is a JSON object with named keys; this is an array'],
    [{ servers: [{ name: 'fs', tools: 'read' }] }, '/servers/0/tools: a list, [...]; this is a string'],
    [
      { servers: [{ name: 'fs', tools: [{ name: 'read', 'x-lazy-tools': [['file']] }] }] },
      '/servers/0/tools/0/x-lazy-tools: the search text is a JSON object with named keys; this is an array',
    ],
  ];
  for (const [catalog, message] of cases) assert.throws(() => catalogTools(catalog), { message });
  const [tool] = catalogTools({ servers: [{ name: 'fs', tools: [{ name: 'read', 'x-lazy-tools': null }] }] });
  assert.equal(tool.name, 'fs__read');
});

test('a name too long for the plugin is cut and ends in the hash the Rust harness gives it', () => {
  const long = 'x'.repeat(400);
  const name = shellName('server', long);
  assert.equal(name.length, MAX_SHELL_NAME_CHARS);
  // host-harness/src/catalog.rs asserts the same ending for the same tool.
  assert.ok(name.startsWith('server__xxx') && name.endsWith('-4734b5a448156761'), name);
  const [first, second] = catalogTools({
    servers: [{ name: 'server', tools: [{ name: `${long}.a` }, { name: `${long}-a` }] }],
  });
  assert.notEqual(first.name, second.name);
  assert.ok(second.name.length <= MAX_SHELL_NAME_CHARS && second.name.endsWith('-2'), second.name);
});

test('a catalog key nothing reads, a schema that is not an object schema, a server name with / are errors', () => {
  const one = (tool, server = 's') => ({ servers: [{ name: server, tools: [tool] }] });
  assert.throws(() => catalogTools(one({ name: 't', descripton: 'lost' })), {
    message:
      "/servers/0/tools/0/descripton: unknown key `descripton` in a tool: did you mean `description`? The shell reads `name`, `description`, `inputSchema`, `x-lazy-tools`; an extension's key starts with `x-`",
  });
  assert.throws(() => catalogTools(one({ name: 't', input_schema: {} })), /did you mean `inputSchema`\?/);
  assert.deepEqual(names(catalogTools(one({ name: 't', method: 'GET' }))), ['s__t']);
  assert.throws(() => catalogTools(one({ name: 't', inputSchema: [] })), {
    message:
      '/servers/0/tools/0/inputSchema: tool `t` of server `s` takes an array; an MCP tool\'s inputSchema is a JSON Schema object with "type": "object"',
  });
  assert.deepEqual(names(catalogTools(one({ name: 'c', inputSchema: null }, 'api.example.com/v2'))), ['api-example-com-v2__c']);
  assert.throws(
    () => catalogTools({ servers: [{ name: 'a/b', tools: [{ name: 'c' }] }, { name: 'a', tools: [{ name: 'b/c' }] }] }),
    {
      message:
        '/servers/1/tools/0: tool `b/c` of server `a` and tool `c` of server `a/b` (at /servers/0/tools/0) have one id, `a/b/c`: a server or tool name holding `/` makes `server/tool` split two ways',
    },
  );
  assert.throws(
    () => catalogTools({ servers: [{ name: 'a', tools: [] }, { name: 'a__b', tools: [] }] }),
    {
      message:
        "/servers/1/name: server `a__b` names its tools `a__b__<tool>`, which begin as server `a`'s (/servers/0) do: a pattern such as `Defer(a__*)` would reach both",
    },
  );
  assert.deepEqual(catalogTools({ servers: [{ name: 'a__b', tools: [] }, { name: '_a', tools: [] }] }), []);
  assert.throws(() => catalogTools(one({ name: 'x', 'x-lazy-tools': { keyword: ['a'] } })), /unknown key `keyword`/);
  const real = catalogTools({
    source: 'tools/list',
    servers: [{ name: 's', package: 'p', tools: [{ name: 't', title: 'T', annotations: {}, _meta: {}, 'x-vendor': 1 }] }],
  });
  assert.deepEqual(names(real), ['s__t']);
});

test('a tool name the model could not call is refused', () => {
  const shell = new ShellCore();
  // An invisible character would make a name print as another's (`echo` and `echo`).
  for (const name of ['', 'a b', 'tab\t', 't\u001b[2J', 'a\u202eb', 'echo\u200b', 'e\u00adcho', 'echo\u206a', 'echo\ufe00', 'x'.repeat(257)]) {
    assert.throws(() => shell.register(new Tool(name, 'd', builtin())), {
      // Quoted as JSON, with the controls JSON.stringify leaves raw (`\u202e`) escaped too.
      message: `invalid tool name ${json(name)}: a tool's name is 1 to 256 characters without whitespace, control characters, bidirectional controls or invisible characters`,
    });
  }
  for (const name of ['x'.repeat(256), 'get.forecast', 'a?c', '名前']) shell.register(new Tool(name, 'd', builtin()));
  assert.equal(shell.tools.length, 4);
});

test('a catalog field of the wrong type is an error at its place, and the catalog registers nothing', async () => {
  const { loadComponent } = await import('../src/component.js');
  const component = await loadComponent();
  const cases = [
    [
      { servers: [{ name: 'gh', tools: [{ name: 'issue', description: 42 }] }] },
      '/servers/0/tools/0/description: the description of tool `issue` of server `gh` is a string; this is a number',
    ],
    [
      { servers: [{ name: 'gh', description: { text: 'x' }, tools: [{ name: 'issue' }] }] },
      '/servers/0/description: the description of server `gh` is a string; this is an object',
    ],
    [{ servers: [{ name: 7, tools: [{ name: 'issue' }] }] }, "/servers/0/name: a server's name is a string; this is a number"],
    [
      { servers: [{ name: 'gh', tools: [{ name: ['issue'] }] }] },
      '/servers/0/tools/0/name: the name of a tool of server `gh` is a string; this is an array',
    ],
    [
      { servers: [{ name: 'gh', category: 1, tools: [] }] },
      '/servers/0/category: the category of server `gh` is a string; this is a number',
    ],
    [
      { servers: [{ name: 'gh', tools: [{ name: 'issue', 'x-lazy-tools': { keywords: 'bug' } }] }] },
      '/servers/0/tools/0/x-lazy-tools/keywords: a list, [...]; this is a string',
    ],
    [
      { servers: [{ name: 'gh', tools: [{ name: 'issue', 'x-lazy-tools': { examples: ['file a bug', 3] } }] }] },
      '/servers/0/tools/0/x-lazy-tools/examples/1: an example of tool `issue` of server `gh` is a string; this is a number',
    ],
    // Valid up to its last server, whose tool's name a built-in holds: nothing of it stays.
    [
      { servers: [{ name: 'fs', description: 'Files.', tools: [{ name: 'read' }] }, { name: 'x', tools: [{ name: 'y' }] }], late: true },
      'a tool named `x__y` is already registered in the global scope',
    ],
  ];
  for (const [catalog, message] of cases) {
    const shell = new Shell();
    shell.registerTools([new Tool('bash', '', builtin())]);
    if (catalog.late) {
      delete catalog.late;
      shell.registerTools([new Tool('x__y', '', builtin())]);
    }
    shell.createAgent('main');
    shell.installPlugin('lazy-tools', component, null);
    const before = names(shell.core.tools);
    assert.throws(() => shell.registerCatalog(catalog), { message });
    assert.deepEqual(names(shell.core.tools), before, message);
    assert.deepEqual([...shell.core.groups], [], message);
    // The plugin and the shell go on.
    shell.registerTools([new Tool('read', '', builtin())]);
    assert.ok(names(shell.nextRequest('main')).includes('read'), message);
  }
  assert.deepEqual(names(catalogTools({ servers: [{ name: 's', category: null, tools: [{ name: 't', description: 'd' }] }] })), ['s__t']);
});

test('a tool whose name or description is not a string is refused at register', () => {
  const shell = new ShellCore();
  assert.throws(() => shell.register(new Tool(7, 'd', builtin())), {
    message: "invalid tool name 7: a tool's name is a string, not a number",
  });
  assert.throws(() => shell.register(new Tool('t', { text: 'd' }, builtin())), {
    message: 'tool `t`: its description is a string, not a object',
  });
});

test('half a character: a name with a lone surrogate is refused; a text with one is sent as the plugin reads it', async () => {
  const { registryTable } = await import('../src/host-imports.js');
  const { loadComponent } = await import('../src/component.js');
  const component = await loadComponent();
  assert.throws(() => new ShellCore().register(new Tool('emoji\ud83d', 'd', builtin())), {
    message:
      'invalid tool name "emoji\\ud83d": it holds half of a character (a lone UTF-16 surrogate), which UTF-8 cannot carry to a plugin',
  });
  const table = registryTable([new Tool('half', '\ude00 a description', builtin()), new Tool('next', 'Next.', builtin())]);
  assert.equal(table.ends[table.ends.length - 1], Buffer.byteLength(table.texts));
  assert.equal(table.texts.slice(4, 5), '\ufffd');
  // Through the plugin, with the registry as a table and as a list: the same tools, no refusal.
  for (const tables of [false, true]) {
    const shell = new Shell();
    shell.core.registryTables = tables;
    shell.registerTools([new Tool('bash', 'Run.', builtin()), new Tool('half', '\ude00 half an emoji', builtin())]);
    shell.createAgent('main');
    shell.installPlugin('lazy-tools', component, { defer: ['bash'] });
    assert.deepEqual(names(shell.nextRequest('main')).filter((n) => ['bash', 'half'].includes(n)), ['half'], `tables ${tables}`);
    assert.deepEqual(shell.plugin('lazy-tools').instance.logs, [], `tables ${tables}`);
  }
});

test('a YAML file of aliases of aliases, nested past 64 or larger than 8 MiB is refused, located, before it is expanded', () => {
  // 7 lines that would expand to 10^6 values.
  let laughs = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
  for (let i = 1; i <= 6; i++) laughs += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
  assert.throws(() => LocatedValue.parse('profile.yml', laughs), {
    message: /^profile\.yml:\d+:\d+: the document has more YAML nodes than a file here may have \(250000, an alias's counted each time it is used\)$/,
  });
  // A few aliases stay: each use is counted, not refused.
  assert.deepEqual(LocatedValue.parse('p.yml', 'base: &b [read, bash]\nmore: *b\n').value, {
    base: ['read', 'bash'],
    more: ['read', 'bash'],
  });
  const deep = `${'['.repeat(65)}x${']'.repeat(65)}`;
  assert.throws(() => LocatedValue.parse('p.yml', deep), {
    message: 'p.yml:1:66: the document is nested deeper than a file here may be (64)',
  });
  assert.doesNotThrow(() => LocatedValue.parse('p.yml', `${'['.repeat(64)}x${']'.repeat(64)}`));
  assert.throws(() => LocatedValue.parse('p.yml', `# ${'x'.repeat(8 << 20)}\n`), {
    message: `p.yml:1:1: the file is ${(8 << 20) + 3} bytes, larger than 8 MiB, the most a YAML file here may have`,
  });
});

test('a YAML file past the node or depth budget is refused before it is built, fast and in little memory', async () => {
  const { spawnSync } = await import('node:child_process');
  const module = new URL('../src/located-yaml.js', import.meta.url);
  // Each in a process of its own with a small heap: the library builds a document's every
  // node first, and 4 million items took 38 s and 3.7 GB.
  const parse = (build) => {
    const started = performance.now();
    const run = spawnSync(
      process.execPath,
      ['--max-old-space-size=256', '--input-type=module', '-e',
        `import { LocatedValue } from '${module}';
         try { LocatedValue.parse('big.yml', ${build}); console.log('parsed'); } catch (e) { console.log(e.message); }`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    return { out: run.stdout.trim() || `${run.signal ?? run.status}: ${run.stderr.slice(-200)}`, ms: performance.now() - started };
  };
  const nodes = "the document has more YAML nodes than a file here may have (250000, an alias's counted each time it is used)";
  for (const [build, message] of [
    // 8 MiB, within MAX_FILE_BYTES: 4 million items of a flow list, 2 million of a block list.
    ["'[' + 'a,'.repeat((8 << 20) / 2 - 2) + 'a]'", `big.yml:1:500000: ${nodes}`],
    ["'- a\\n'.repeat((8 << 20) / 4 - 1)", `big.yml:250001:1: ${nodes}`],
    // A mapping's keys are nodes too, as serde-saphyr counts them for the Rust harness.
    ["'{' + 'k: v, '.repeat(125_000) + '}'", `big.yml:1:749999: ${nodes}`],
    // Text that is not YAML, which the library would make an error object of token by token.
    ["'[' + ','.repeat((8 << 20) - 2) + ']'", `big.yml:1:250002: ${nodes}`],
    ["'&a '.repeat((8 << 20) / 3)", `big.yml:1:750001: ${nodes}`],
    ["']'.repeat(8 << 20)", 'big.yml:1:1: a `]` here closes nothing'],
    ["'['.repeat(200_000) + ']'.repeat(200_000)", 'big.yml:1:66: the document is nested deeper than a file here may be (64)'],
    ["'- '.repeat(100_000) + 'x'", /^big\.yml:1:\d+: the document is nested deeper than a file here may be \(64\)$/],
  ]) {
    const { out, ms } = parse(build);
    if (typeof message === 'string') assert.equal(out, message, build);
    else assert.match(out, message, build);
    assert.ok(ms < 10_000, `${build}: ${Math.round(ms)} ms`);
  }
});

test('a YAML error is the first one, located, and the text it quotes is escaped', () => {
  assert.throws(() => LocatedValue.parse('p.yml', 'a: [b\u001b[2J'), { message: /^p\.yml:1:\d+: / });
  assert.throws(() => LocatedValue.parse('p.yml', 'a: 1\n---\nb: 2\n'), {
    message: 'p.yml:2:1: the file holds several YAML documents; a file here holds one',
  });
  assert.throws(() => LocatedValue.parse('p.yml', 'a: 1\nb: ]\u001b[2J\n'), (e) => {
    assert.doesNotMatch(e.message, /\u001b/u);
    assert.match(e.message, /^p\.yml:2:4: /);
    return true;
  });
});

test("an agent's id is its parent's and one name more, at most 64 deep and 1024 bytes, as in the Rust harness", () => {
  const shell = new Shell();
  shell.registerTools([new Tool('bash', '', builtin()), new Tool('read', '', builtin())]);
  shell.createAgent('main');
  shell.createAgent('a', 'main');
  shell.restrict('main/a', 'parent', ['read']);
  // `main/a/b` made under `main` would escape `main/a`'s restriction.
  assert.throws(() => shell.createAgent('a/b', 'main'), {
    message: 'invalid agent name `main/a/b`: use letters, digits, `-` and `_`',
  });
  assert.throws(() => shell.core.createAgent('main/a/b', 'main'), /invalid agent name `main\/a\/b`/);
  assert.throws(() => shell.core.createAgent('x', 'main'), /invalid agent name `x`/);
  assert.throws(() => shell.createAgent('\u001b[2J', 'main'), { message: 'invalid agent name `main/\\u{1b}[2J`: use letters, digits, `-` and `_`' });
  assert.equal(shell.createAgent('b', 'main/a'), 'main/a/b');
  assert.deepEqual(names(shell.nextRequest('main/a/b')), ['read']);
  let id = 'main';
  for (let depth = 2; depth <= 64; depth++) id = shell.createAgent('x', id);
  assert.equal(id.split('/').length, 64);
  assert.throws(() => shell.createAgent('x', id), {
    message: `agent \`main/${'x/'.repeat(17)}x…\` is 65 agents deep; a chain holds at most 64 (\`main\` is 1)`,
  });
  assert.equal(shell.createAgent('y'.repeat(1024 - 5), 'main').length, 1024);
  assert.throws(() => shell.createAgent('y'.repeat(1024 - 4), 'main'), {
    message: `agent id \`main/${'y'.repeat(35)}…\` is 1025 bytes long; an id holds at most 1024`,
  });
});

test('a catalog error or a rejected config shows control and bidi characters as escapes, one line each', async () => {
  const { ConfigRejected } = await import('../src/shell.js');
  const { fakeComponent } = await import('./fake-plugin.js');
  assert.throws(() => catalogTools({ servers: [{ name: 'gh\u001b[2J\u001b]0;owned\u0007\u202e', tools: [{ name: 't' }, { name: 't' }] }] }), {
    message:
      '/servers/0/tools/1: tool `t` of server `gh\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{202e}` is listed twice (first at /servers/0/tools/0)',
  });
  assert.throws(() => catalogTools({ servers: [{ name: 's', tools: [{ name: 't', 'x-lazy-tools': { 'k\u001b[31m': 1 } }] }] }), {
    message: '/servers/0/tools/0/x-lazy-tools/k\\u{1b}[31m: unknown key `k\\u{1b}[31m`; it holds `keywords`, `examples`, `descriptions`',
  });
  const rejecting = fakeComponent(() => ({
    configure() {
      throw { payload: [{ pointer: '/defer/0', message: 'unknown tool `x\u001b[2J`\nforged: line \u2066' }] };
    },
  }));
  const shell = new Shell();
  assert.throws(() => shell.installPlugin('p', rejecting, { defer: ['x'] }), (e) => {
    assert.ok(e instanceof ConfigRejected);
    assert.equal(e.message, 'plugin `p` rejected its config:\n  /defer/0: unknown tool `x\\u{1b}[2J`\\nforged: line \\u{2066}');
    return true;
  });
});

test("a plugin's error value reaches the shell's exceptions escaped", async () => {
  const { fakeComponent } = await import('./fake-plugin.js');
  const refusing = fakeComponent(() => ({
    visibleTools() {
      throw { payload: { tag: 'host', val: '\u001b]0;owned\u0007\u001b[2J\u202eevil' } };
    },
  }));
  const shell = new Shell();
  shell.installPlugin('p', refusing, {});
  shell.createAgent('main');
  assert.throws(() => shell.nextRequest('main'), (e) => {
    assert.equal(e.message, 'plugin `p`: the host refused: \\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{202e}evil');
    return true;
  });
});

test("a plugin's text that is not JSON, or a restore it refuses, is named by plugin and call, never quoted raw", async () => {
  const { fakeComponent } = await import('./fake-plugin.js');
  const { shell } = await import('./two-tools.js');
  const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
  const guard = (o = {}) => ({ name: 'guard', description: 'd', parameters: '{}', origin: { tag: 'builtin' }, ...o });
  const installed = (overrides) => {
    const s = shell();
    s.installPlugin('p', fakeComponent(() => ({ guardTools: () => [guard()], ...overrides })), null);
    return s;
  };
  const restoring = installed({ restoreState() { throw { payload: 'bad \u001b]0;owned\u0007\u001b[2J state' }; } });
  assert.throws(() => restoring.restoreState('p', '{}'), {
    message: 'plugin `p` cannot restore: bad \\u{1b}]0;owned\\u{7}\\u{1b}[2J state',
  });
  const executing = installed({ execute: () => ({ json: '\u001b[2J\u001b]0;owned\u0007', text: '', isError: false }) });
  assert.throws(() => executing.call('main', 'guard', {}), {
    message: 'plugin `p` returned a result for `guard` (execute) that is not JSON',
  });
  const forwarding = installed({
    resolveCall: () => ({ tag: 'forward', val: { tool: 'bash', arguments: '\u001b[2Jnot json', implicitlyLoaded: [] } }),
  });
  assert.throws(() => forwarding.call('main', 'guard', {}), {
    message: 'plugin `p` forwarded a call to `guard` (resolve-call) with arguments that are not JSON',
  });
  const rejecting = installed({ resolveCall: () => ({ tag: 'reject', val: { json: '\u001b[2Jnot json', text: '', isError: true } }) });
  assert.throws(() => rejecting.call('main', 'guard', {}), {
    message: 'plugin `p` rejected a call to `guard` (resolve-call) with a result that is not JSON',
  });
  const forwardingUnknown = installed({
    resolveCall: () => ({ tag: 'forward', val: { tool: 'x\u001b[2J', arguments: '{}', implicitlyLoaded: [] } }),
  });
  assert.deepEqual(forwardingUnknown.call('main', 'guard', {}), { kind: 'refused', reason: 'unknown tool `x\\u{1b}[2J`' });
  assert.throws(
    () => shell().installPlugin('q', fakeComponent(() => ({ guardTools: () => [guard({ name: 'g\u001b[2J', parameters: '\u001b]0;x\u0007' })] })), null),
    { message: "the plugin `q`'s tool `g\\u{1b}[2J` (guard-tools) has parameters that are not JSON" },
  );
  // A guard name is quoted as JSON, which JSON.stringify would leave holding C1 and bidi controls.
  for (const [name, shown] of [['evil\u202egnp.exe', '"evil\\u202egnp.exe"'], ['x\u009b2J', '"x\\u009b2J"'], ['a b\u0085', '"a b\\u0085"']]) {
    assert.throws(() => shell().installPlugin('p', fakeComponent(() => ({ guardTools: () => [guard({ name })] })), null), (e) => {
      assert.doesNotMatch(e.message, RAW);
      assert.ok(e.message.startsWith(`invalid tool name ${shown}: `), e.message);
      return true;
    });
  }
});

test("a name the shell does not know (an agent, a tool, a lazy group, a scope) is shown escaped in its error", () => {
  const s = core();
  assert.throws(() => s.chain('x\u001b[2J'), { message: 'unknown agent `x\\u{1b}[2J`' });
  assert.throws(() => s.restrict('main', 'p', ['read', 'y\u202e']), { message: 'cannot restrict `main`: unknown tool `y\\u{202e}`' });
  assert.throws(() => s.loadGroup('g\u009b'), { message: 'the shell has no lazy group `g\\u{9b}`' });
  assert.throws(() => s.unregister('t\u0007', 'a\u001b'), { message: 'no tool named `t\\u{7}` is registered in the scope of agent `a\\u{1b}`' });
});

test('a forwarded call lists at most 20 problems with its arguments, as the Rust harness, and a key Object has is no property', async () => {
  const { fakeComponent } = await import('./fake-plugin.js');
  const { shell } = await import('./two-tools.js');
  const forwarding = (tool, args) => {
    const s = shell();
    s.registerTools([tool]);
    s.installPlugin('p', fakeComponent(() => ({
      guardTools: () => [{ name: 'guard', description: 'd', parameters: '{}', origin: { tag: 'builtin' } }],
      resolveCall: () => ({ tag: 'forward', val: { tool: tool.name, arguments: JSON.stringify(args), implicitlyLoaded: [] } }),
    })), null);
    return s.call('main', 'guard', {});
  };
  const values = Array.from({ length: 200 }, (_, i) => `value-number-${i}`);
  const pick = new Tool('gh__pick', '', { tag: 'mcp', val: 'gh' }, { type: 'object', properties: { xs: { type: 'array', items: { enum: values } } } });
  const out = forwarding(pick, { xs: Array(20_000).fill(0) });
  assert.equal(out.json.problems.length, 20);
  assert.equal(out.json.problems[19], `/xs/19: 0 is not one of ${JSON.stringify(values)}`);
  assert.equal(out.text.split('\n- ').length, 21);
  const strict = new Tool('gh__strict', '', { tag: 'mcp', val: 'gh' }, {
    type: 'object', properties: { a: { type: 'string' } }, required: ['constructor'], additionalProperties: false,
  });
  assert.deepEqual(forwarding(strict, { toString: 1 }).json.problems, [
    '"constructor" is a required property',
    'additional property "toString" is not allowed',
  ]);
});

test('registering a tool costs the same with 50,000 registered: a catalog that large, or a plugin of 20,000 guard tools on every agent, registers in well under a second', async () => {
  const { fakeComponent } = await import('./fake-plugin.js');
  const { shell } = await import('./two-tools.js');
  const s = new Shell();
  let started = performance.now();
  s.registerCatalog({ servers: [{ name: 'srv', tools: Array.from({ length: 50_000 }, (_, i) => ({ name: `t${i}` })) }] });
  let ms = performance.now() - started;
  // Each registration walked the registry: 11 s.
  assert.ok(ms < 3000, `a catalog of 50,000 tools took ${Math.round(ms)} ms`);
  const guards = Array.from({ length: 20_000 }, (_, i) => ({ name: `g${i}`, description: 'd', parameters: '{}', origin: { tag: 'builtin' } }));
  const t = shell();
  started = performance.now();
  t.installPlugin('p', fakeComponent(() => ({ guardTools: () => guards })), null);
  t.createAgent('w1', 'main');
  t.createAgent('w2', 'main');
  ms = performance.now() - started;
  assert.ok(ms < 3000, `20,000 guard tools on three agents took ${Math.round(ms)} ms`);
  assert.equal(t.core.tools.length, 2 + 3 * 20_000);
  // The index follows removals: an agent's guards go with it, and a name is free again.
  t.disposeAgent('main/w2');
  assert.equal(t.core.resolve('main/w1', 'g7').scope, 'main/w1');
  assert.equal(t.core.resolve('main', 'g7').scope, 'main');
  t.disposePlugin('p');
  assert.equal(t.core.resolve('main', 'g7'), undefined);
  t.registerTools([new Tool('g7', '', builtin())]);
  assert.equal(t.core.resolve('main/w1', 'g7').owner, undefined);
});

test('without LAZY_TOOLS_COMPONENT the component is found where the harness build puts it', async () => {
  const { BUILT_COMPONENTS, componentPath } = await import('../src/component.js');
  const { existsSync } = await import('node:fs');
  const given = process.env.LAZY_TOOLS_COMPONENT;
  delete process.env.LAZY_TOOLS_COMPONENT;
  try {
    const path = componentPath();
    assert.ok(BUILT_COMPONENTS.includes(path), path);
    // `cargo test` built the harness, and so one of them, before this test runs.
    assert.ok(existsSync(path), `${path} does not exist`);
  } finally {
    if (given !== undefined) process.env.LAZY_TOOLS_COMPONENT = given;
  }
});

test('a catalog of more tools than a plugin holds is refused, as the Rust harness refuses it', async () => {
  const { MAX_CATALOG_TOOLS } = await import('../src/shell.js');
  const tools = (n) => ({ servers: [{ name: 's', tools: Array.from({ length: n }, (_, t) => ({ name: `t${t}` })) }] });
  assert.equal(catalogTools(tools(MAX_CATALOG_TOOLS)).length, MAX_CATALOG_TOOLS);
  assert.throws(() => catalogTools(tools(MAX_CATALOG_TOOLS + 1)), {
    message: /^\/servers: 50001 tools; a catalog here holds at most 50000/,
  });
});

test('line separators and invisible characters are shown escaped, in text and in printed JSON, as the Rust harness shows them', async () => {
  const { escape, escapeMessage, json: printable } = await import('../src/terminal.js');
  assert.equal(escapeMessage('a\u2028b\u2029c\n'), 'a\\u{2028}b\\u{2029}c\n');
  assert.equal(escape('echo\u200b\u2060\ufeff\u00ad'), 'echo\\u{200b}\\u{2060}\\u{feff}\\u{ad}');
  // A joiner inside an emoji stays.
  assert.equal(escape('👩\u200d💻'), '👩\u200d💻');
  assert.equal(printable('echo\u200b\u2028'), '"echo\\u200b\\u2028"');
  assert.equal(escape('e\u2062c\u034fh\u3164o\u{e0020}\u206a'), 'e\\u{2062}c\\u{34f}h\\u{3164}o\\u{e0020}\\u{206a}');
  // Emoji and CJK variation selectors show as written.
  assert.equal(escape('\u2764\ufe0f \u845b\u{e0100}'), '\u2764\ufe0f \u845b\u{e0100}');
  // A character of two UTF-16 units is written as both, and reads back.
  assert.equal(printable('o\u{e0020}'), '"o\\udb40\\udc20"');
  assert.equal(JSON.parse(printable('o\u{e0020}')), 'o\u{e0020}');
});

test("a tool's search text past its bounds is an error at its place, as in the Rust harness", () => {
  const withText = (text) => () => catalogTools({ servers: [{ name: 's', tools: [{ name: 't', 'x-lazy-tools': text }] }] });
  assert.throws(withText({ keywords: Array(33).fill('k') }), {
    message: "/servers/0/tools/0/x-lazy-tools/keywords: 33 texts; a tool's `keywords` holds at most 32",
  });
  assert.throws(withText({ examples: ['ok', 'é'.repeat(501)] }), {
    message: '/servers/0/tools/0/x-lazy-tools/examples/1: 501 characters; a text here holds at most 500',
  });
  const full = Array(32).fill('é'.repeat(500));
  withText({ keywords: full, examples: full, descriptions: full })();
});

test('a key written twice in one object of a catalog is an error at its place, as in the Rust harness', async () => {
  const { parseJsonFile } = await import('../src/bounded.js');
  // JSON.parse keeps the second `properties`: the tool lost its parameter `a` without a word.
  const text = '{"servers": [{"name": "s", "tools": [{"name": "t", "inputSchema":\n {"type": "object", "properties": {"a": {}}, "properties": {"b": {}}}}]}]}';
  assert.throws(() => parseJsonFile('c.json', text, 'the catalog'), {
    message: 'c.json:2:46: the catalog names the key `properties` twice in one object (only one can be meant)',
  });
  // Spelt apart by an escape, a key is still the same key; the same key in two objects, or as
  // a value, or inside a string, is not repeated.
  assert.throws(() => parseJsonFile('c.json', '{"a\u0062": 1, "ab": 2}', 'the catalog'), /names the key `ab` twice/);
  assert.deepEqual(
    parseJsonFile('c.json', '{"a": {"a": "a"}, "b": [{"a": 1}, {"a": "\\"a\\": {,"}], "c": "a"}', 'the catalog'),
    { a: { a: 'a' }, b: [{ a: 1 }, { a: '"a": {,' }], c: 'a' },
  );
  // A string of millions of characters, escapes and backslashes before a quote among them.
  const icon = `data:image/png;base64,${'A'.repeat(12 << 20)}`;
  const big = JSON.stringify({ servers: [{ name: 's', tools: [{ name: 't', icons: [{ src: icon }], title: '\\"\\\\' }] }] });
  assert.equal(parseJsonFile('c.json', big, 'the catalog').servers[0].tools[0].icons[0].src.length, icon.length);
  // Not JSON after such a string: where, not a stack overflow.
  assert.throws(() => parseJsonFile('c.json', `${big.slice(0, -1)},}`, 'the catalog'), {
    message: `c.json:1:${big.length + 1}: the catalog is not JSON here: expected a key, in double quotes, found \`}\``,
  });
  const escapes = JSON.stringify({ a: '\\"'.repeat(1 << 20), b: 1 });
  assert.deepEqual(Object.keys(parseJsonFile('c.json', escapes, 'the catalog')), ['a', 'b']);
  assert.throws(() => parseJsonFile('c.json', '{"a\\\\": 1, "b": "\\\\\\"", "a\\\\": 2}', 'the catalog'), /names the key `a\\` twice/);
  // Its name reaches the terminal escaped.
  assert.throws(() => parseJsonFile('c.json', '{"\\u001b[2J": 1, "\\u001b[2J": 2}', 'the catalog'), /names the key `\\u\{1b\}\[2J` twice/);
});

test('a catalog may start with a byte-order mark, as in the Rust harness', async () => {
  const { parseJsonFile } = await import('../src/bounded.js');
  assert.deepEqual(parseJsonFile('c.json', '\ufeff{"servers": []}', 'the catalog'), { servers: [] });
  assert.throws(() => parseJsonFile('c.json', ' \ufeff{}', 'the catalog'), /^Error: c\.json:1:2: the catalog is not JSON here/);
});
