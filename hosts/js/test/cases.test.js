// Every fixture folder under tests/cases/ (the same files the Rust harness
// runs) through the JavaScript shell and the jco-transpiled component. New
// folders are picked up as they appear.

import assert from 'node:assert/strict';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { REPO_ROOT, loadComponent } from '../src/component.js';
import { runCase } from '../src/script.js';
import { Shell } from '../src/shell.js';

const CASES = join(REPO_ROOT, 'tests/cases');

const component = await loadComponent();
const dirs = readdirSync(CASES, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(CASES, d.name, 'case.yml')))
  .map((d) => d.name)
  .sort();

test('the fixture folder holds cases', (t) => {
  t.assert.ok(dirs.length > 0, `no case folders under ${CASES}`);
});

/** The log lines in which a plugin of `shell` turned down its registry table. */
const refusedTables = (shell) =>
  shell.plugins.flatMap((p) => p.instance.logs).filter((l) => l.message.includes('registry-table'));

/** `component`, counting in `sent.tables` the registry tables the host gives its plugins. */
const countingTables = (sent) => ({
  instantiate(imports) {
    const host = imports['dsh:tool-restriction/host'];
    const registryTable = () => {
      const table = host.registryTable();
      if (table !== undefined) sent.tables += 1;
      return table;
    };
    return component.instantiate({ ...imports, 'dsh:tool-restriction/host': { ...host, registryTable } });
  },
});

for (const name of dirs) {
  test(name, () => {
    runCase(join(CASES, name), component, () => new Shell());
  });
  // The same case with the registry sent as one table (WIT 0.3.0
  // `registry-table`, as this second host writes it): it must come out the
  // same, read from the table, not from the list. A case whose config was
  // accepted ran the plugin over the registry: it got at least one table.
  test(`${name}, with a registry table`, () => {
    let shell;
    const sent = { tables: 0 };
    const ran = runCase(join(CASES, name), countingTables(sent), () => {
      shell = new Shell();
      shell.core.registryTables = true;
      return shell;
    });
    assert.deepEqual(refusedTables(shell), []);
    if (ran.configErrors === undefined) assert.ok(sent.tables > 0, 'the plugin read no registry table');
  });
}
