// Real components, made here from the contract's WIT, that misbehave as a
// hostile or broken plugin would: a core module whose every export answers
// at once with an empty value (a zeroed result: `ok`, `pass`, empty lists),
// but for the exports given their own WebAssembly text (`unreachable` traps,
// `(loop (br 0))` never ends, `memory.grow` takes memory, `call $host:log`
// calls the shell's `log` import). jco embeds the
// WIT and makes the component; loadComponent transpiles it as it does the
// real plugin's.

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { componentEmbed, componentNew, parse, print } from '@bytecodealliance/jco';

import { REPO_ROOT, loadComponent } from '../src/component.js';

const WIT = join(REPO_ROOT, 'wit/since_v0.3.0/tool-restriction.wit');
const PREFIX = 'cm32p2|dsh:tool-restriction/restriction@0.3|';
/** Where an export's zeroed answer is: memory below the allocator's heap. */
const ANSWER = 'i32.const 1024';

let dummy;

/**
 * A component whose export `name` runs `bodies[name]` (WebAssembly text
 * ending in the export's results) and whose others answer empty;
 * `bodies._initialize` runs as it is instantiated. `extra` is
 * more module text (data, globals). The core module has 64 pages of memory.
 */
export async function hostileComponent(bodies, extra = '') {
  dummy ??= await print(
    await componentEmbed({ dummy: true, witSource: readFileSync(WIT, 'utf8'), world: 'restriction-plugin' }),
  );
  let text = dummy.replace('(memory (;0;) 0)', `(memory (;0;) 64)\n  (global $heap (mut i32) (i32.const 65536))\n  ${extra}`);
  const exports = new Map(
    [...text.matchAll(/\(export "([^"]+)" \(func (\d+)\)\)/g)].map(([, name, index]) => [name, index]),
  );
  // The host's imports, which a body calls as `$host:log`, `$host:tools-generation`, ...
  const hostImports = new Map(
    [...text.matchAll(/\(import "cm32p2\|dsh:tool-restriction\/host@[^"]*" "([^"]+)" \(func \(;(\d+);\)/g)].map(
      ([, name, index]) => [name, index],
    ),
  );
  const withImports = (code) =>
    code.replace(/\$host:([a-z-]+)/g, (_, name) => {
      if (!hostImports.has(name)) throw new Error(`the host has no import \`${name}\``);
      return hostImports.get(name);
    });
  const body = (index, code) => {
    const at = new RegExp(`(\\(func \\(;${index};\\) \\(type \\d+\\)[^\\n]*)\\n    unreachable\\n  \\)`);
    if (!at.test(text)) throw new Error(`no body to replace for function ${index}`);
    text = text.replace(at, (_, head) => `${head}\n    ${code}\n  )`);
  };
  for (const [name, index] of exports) {
    if (!name.startsWith(PREFIX) || name.endsWith('_post')) continue;
    const own = bodies[name.slice(PREFIX.length)];
    const returns = new RegExp(`\\(func \\(;${index};\\) \\(type \\d+\\)[^\\n]*\\(result i32\\)`).test(text);
    body(index, own === undefined ? (returns ? ANSWER : 'nop') : withImports(own));
  }
  // A bump allocator: (old pointer, old size, align, new size) -> pointer.
  body(
    exports.get('cm32p2_realloc'),
    '(local.set 0 (global.get $heap)) (global.set $heap (i32.and (i32.add (i32.add (global.get $heap) (local.get 3)) (i32.const 15)) (i32.const -16))) (local.get 0)',
  );
  // What the component runs as it is instantiated (jco calls it then), when given.
  if (bodies._initialize !== undefined) {
    const empty = new RegExp(`\\((func \\(;${exports.get('cm32p2_initialize')};\\) \\(type \\d+\\))\\)`);
    if (!empty.test(text)) throw new Error('no empty cm32p2_initialize to give a body');
    text = text.replace(empty, (_, head) => `(${head}\n    ${withImports(bodies._initialize)}\n  )`);
  }
  const component = await componentNew(await parse(text));
  const sha = createHash('sha256').update(component).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), 'lazy-tools-js-host-hostile');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${sha}.wasm`);
  writeFileSync(path, component);
  return loadComponent(path);
}
