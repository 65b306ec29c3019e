// Speed of the lazy-tools component in the JavaScript shell, through jco,
// at 10,000 tools: the pre-execute verdict and one tool_search, as medians.
// The tools are generated the way `host-harness bench search-speed` does, so
// the Rust harness's figures on the same registry sit beside these; the
// generated catalog is written out for `host-harness bench verdict --catalog`.
//
//   node bench/speed.js [--tools 10000] [--runs 50] [--queries FILE]... [--write-catalog FILE]

import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { REPO_ROOT, loadComponent } from '../src/component.js';
import { Shell } from '../src/shell.js';
import { Tool, builtin } from '../src/tools.js';

const { values: options } = parseArgs({
  options: {
    tools: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '50' },
    queries: { type: 'string', multiple: true },
    catalog: { type: 'string', multiple: true },
    'write-catalog': { type: 'string' },
  },
});
const TOOLS = Number(options.tools);
const RUNS = Number(options.runs);
if (!Number.isInteger(TOOLS) || TOOLS < 1) throw new Error(`--tools: expected a whole number, got ${options.tools}`);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs: expected a whole number, got ${options.runs}`);
const catalogPaths = options.catalog ?? [
  join(REPO_ROOT, 'catalogs/livemcpbench.json'),
  join(REPO_ROOT, 'catalogs/reference-servers.json'),
];
const queryPaths = options.queries ?? [join(REPO_ROOT, 'bench/zh.jsonl')];

/**
 * `tools` tools from `catalogs`, deterministically: every server of every
 * catalog in order, then again until there are enough (the last copy cut); a
 * server whose name is taken becomes `<server>-2`, `<server>-3`, ...
 */
function generate(catalogs, tools) {
  const servers = catalogs.flatMap((c) => c.servers).filter((s) => s.tools?.length > 0);
  if (servers.length === 0) throw new Error('the catalogs have no tools');
  const out = [];
  const taken = new Set();
  let count = 0;
  for (;;) {
    for (const server of servers) {
      if (count === tools) return { servers: out };
      let name = server.name;
      for (let copy = 2; taken.has(name); copy++) name = `${server.name}-${copy}`;
      taken.add(name);
      const kept = server.tools.slice(0, tools - count);
      count += kept.length;
      out.push({ ...server, name, tools: kept });
    }
  }
}

const median = (samples) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];

/**
 * Per-call medians in nanoseconds over `samples` batches of `batch` calls
 * (after warm-up batches, so V8 has tiered up): wall-clock time, and the
 * process's CPU time, which a machine shared with other builds disturbs less.
 */
function medianNs(samples, batch, fn) {
  for (let w = 0; w < 5; w++) for (let i = 0; i < batch; i++) fn();
  const wall = [];
  const cpu = [];
  for (let s = 0; s < samples; s++) {
    const start = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    for (let i = 0; i < batch; i++) fn();
    const used = process.cpuUsage(cpuStart);
    wall.push(Number(process.hrtime.bigint() - start) / batch);
    cpu.push(((used.user + used.system) * 1000) / batch);
  }
  return { wall: median(wall), cpu: median(cpu) };
}

/** Runs `fn`; returns its value, its wall-clock milliseconds and its CPU milliseconds. */
function timeMs(fn) {
  const start = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  const value = fn();
  const used = process.cpuUsage(cpuStart);
  return [value, Number(process.hrtime.bigint() - start) / 1e6, (used.user + used.system) / 1000];
}

// The core built-ins an agent shell ships (names only: the verdict does not read schemas).
const CORE_BUILTINS = ['read', 'write', 'edit', 'bash', 'glob', 'grep', 'web_search', 'web_fetch', 'ask_user_question', 'skill'];

const catalogs = catalogPaths.map((p) => JSON.parse(readFileSync(p, 'utf8')));
const queries = queryPaths.flatMap((p) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line).query),
);
const catalog = generate(catalogs, TOOLS);
if (options['write-catalog']) writeFileSync(options['write-catalog'], JSON.stringify(catalog));
const component = await loadComponent();
const row = (what, wall, cpu) => console.log(`${what.padEnd(92)} ${wall.padStart(12)} ${cpu.padStart(12)}`);
const ms = (samples) => `${median(samples).toFixed(3)} ms`;
const ns = (value) => `${value.toFixed(0)} ns`;

console.log(
  `lazy-tools in the JS host (node ${process.version}, jco), component ${component.size} bytes, sha256 ${component.sha256.slice(0, 16)}`,
);
console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${availableParallelism()} cores`);

// Pre-execute verdict: built-ins and the generated tools, the zero-config preset.
{
  const shell = new Shell();
  shell.registerTools(CORE_BUILTINS.map((name) => new Tool(name, `The ${name} tool.`, builtin())));
  shell.registerCatalog(catalog);
  shell.createAgent('main');
  shell.installPlugin('lazy-tools', component, null);
  const plugin = shell.plugin('lazy-tools').instance;
  const deferred = shell.core.tools.find((t) => t.origin.tag === 'mcp').name;
  if (plugin.preExecute('main', deferred, '{}').tag !== 'deny') {
    throw new Error(`\`${deferred}\` should be deferred under the preset`);
  }
  const SAMPLES = 101;
  const BATCH = 2000;
  console.log(
    `\npre-execute verdict, ${shell.core.tools.length} tools registered, median per call over ${SAMPLES} batches of ${BATCH}:`,
  );
  row('', 'wall', 'cpu');
  for (const [label, tool] of [
    ['deny (deferred tool)', deferred],
    ['pass (visible tool)', 'bash'],
  ]) {
    const { wall, cpu } = medianNs(SAMPLES, BATCH, () => plugin.preExecute('main', tool, '{}'));
    row(`  ${label}`, ns(wall), ns(cpu));
  }
  const call = medianNs(SAMPLES, 200, () => shell.call('main', deferred, null));
  row('  shell.call, denied (whole shell call: resolve, waterfall)', ns(call.wall), ns(call.cpu));
}

// A plugin's first look at the registry: installing it on a shell that holds
// every tool (configure, guard tools, the first registry-changed), with the
// registry as one table and as a list, alternating run by run.
{
  const installs = { table: { wall: [], cpu: [] }, list: { wall: [], cpu: [] } };
  for (let run = 0; run < Math.min(RUNS, 10); run++) {
    for (const tables of run % 2 === 0 ? [true, false] : [false, true]) {
      const shell = new Shell();
      shell.core.registryTables = tables;
      shell.registerCatalog(catalog);
      const [, wall, cpu] = timeMs(() => shell.installPlugin('lazy-tools', component, { defer: ['Defer(*)'] }));
      const samples = installs[tables ? 'table' : 'list'];
      samples.wall.push(wall);
      samples.cpu.push(cpu);
    }
  }
  console.log(`\na plugin's first look, medians of ${installs.table.wall.length} installs each way:`);
  row('', 'wall', 'cpu');
  row('  install on 10,000 tools, the registry as one table (registry-table)', ms(installs.table.wall), ms(installs.table.cpu));
  row('  install on 10,000 tools, the registry as a list (this shell\'s default)', ms(installs.list.wall), ms(installs.list.cpu));
}

// tool_search: every tool deferred, so all of them compete.
{
  const shell = new Shell();
  shell.registerCatalog(catalog);
  shell.installPlugin('lazy-tools', component, { defer: ['Defer(*)'] });
  const plugin = shell.plugin('lazy-tools').instance;
  const timedCall = (args) => {
    const agent = shell.createAgent('timed');
    const [outcome, wall, cpu] = timeMs(() => shell.call(agent, 'tool_search', args));
    shell.disposeAgent(agent);
    if (outcome.kind !== 'completed' || outcome.isError) {
      throw new Error(`tool_search did not run: ${JSON.stringify(outcome)}`);
    }
    return [outcome.json.matches.map((m) => m.name), { wall, cpu }];
  };
  // Alternating, run by run: the registry as one table (WIT 0.3.0
  // `registry-table`) and as the list a shell that builds no table sends.
  const reloads = { wall: [], cpu: [] };
  const listed = { wall: [], cpu: [] };
  for (let run = 0; run < RUNS; run++) {
    for (const [tables, samples] of [
      [true, reloads],
      [false, listed],
    ]) {
      shell.core.registryTables = tables;
      const [, wall, cpu] = timeMs(() => plugin.registryChanged());
      samples.wall.push(wall);
      samples.cpu.push(cpu);
    }
  }
  shell.core.registryTables = false;
  const refused = plugin.logs.filter((l) => l.message.includes('registry-table'));
  if (refused.length > 0) throw new Error(`the plugin turned down the registry table: ${refused[0].message}`);
  // The search's share of a call is small next to the call's refresh of ten
  // thousand names, so each run searches ten queries in one call and
  // compares it with a call that loads the same tools by name.
  const PER_CALL = 10;
  const withSearch = { wall: [], cpu: [] };
  const byName = { wall: [], cpu: [] };
  const perQuery = { wall: [], cpu: [] };
  for (let run = 0; run < RUNS; run++) {
    const batch = Array.from({ length: PER_CALL }, (_, i) => queries[(run * PER_CALL + i) % queries.length]);
    const [names, searched] = timedCall({ queries: batch, top_k: 5 });
    const [, named] = timedCall({ tool_names: names });
    for (const clock of ['wall', 'cpu']) {
      withSearch[clock].push(searched[clock]);
      byName[clock].push(named[clock]);
      perQuery[clock].push(Math.max(0, searched[clock] - named[clock]) / PER_CALL);
    }
  }
  console.log(`\n${catalog.servers.reduce((n, s) => n + s.tools.length, 0)} tools generated, ${queries.length} queries, medians of ${RUNS} runs:`);
  row('', 'wall', 'cpu');
  const rows = [
    ['  registry-changed, nothing changed (the whole registry over jco as one table, compared)', reloads],
    ['  the same, the registry as a list of records (this shell\'s default: it builds no table)', listed],
    ['  tool_search call, 10 queries (shell, jco, refresh, 10 searches, load)', withSearch],
    ['  tool_search call, the same tools by exact name (no search)', byName],
    ['  one search inside the component (median per-run difference / 10)', perQuery],
  ];
  for (const [what, samples] of rows) row(what, ms(samples.wall), ms(samples.cpu));
}
