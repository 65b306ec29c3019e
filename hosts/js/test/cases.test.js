// Every fixture folder under tests/cases/ (the same files the Rust harness
// runs) through the JavaScript shell and the jco-transpiled component. New
// folders are picked up as they appear.

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

for (const name of dirs) {
  test(name, () => {
    runCase(join(CASES, name), component, () => new Shell());
  });
}
