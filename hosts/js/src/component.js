// The lazy-tools component as JavaScript: the very `.wasm` that cargo builds,
// transpiled by jco into ES modules plus core wasm modules, kept on disk by
// the component's sha256, compiled once per process, instantiated per shell.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { transpile } from '@bytecodealliance/jco';

/** The repository's root (hosts/js/src -> ../../..). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const NAME = 'lazy_tools';

/**
 * The component to run: `$LAZY_TOOLS_COMPONENT` (the Rust test that runs
 * this host passes the one cargo built), else where host-harness's build
 * script puts it.
 */
export function componentPath() {
  return (
    process.env.LAZY_TOOLS_COMPONENT ||
    join(REPO_ROOT, 'target/plugin-wasm/wasm32-wasip2/release/lazy_tools.wasm')
  );
}

/**
 * Transpiles the component at `path` with jco, once per content: the output
 * goes to `target/js-host/<sha256 prefix>/` (or `$LAZY_TOOLS_JS_OUT`), written
 * to a temporary folder and renamed, so concurrent runs never see half of it.
 * Returns the output folder and the component's sha256.
 */
export async function transpiled(path = componentPath()) {
  if (!existsSync(path)) {
    throw new Error(
      `the component ${path} does not exist: build it with \`cargo build -p host-harness\` ` +
        '(its build script builds the plugin for wasm32-wasip2) or set LAZY_TOOLS_COMPONENT',
    );
  }
  const bytes = readFileSync(path);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const root = process.env.LAZY_TOOLS_JS_OUT || join(REPO_ROOT, 'target/js-host');
  const outDir = join(root, sha256.slice(0, 16));
  if (existsSync(join(outDir, `${NAME}.js`))) return { outDir, sha256, size: bytes.length };

  const { files } = await transpile(bytes, {
    name: NAME,
    // The host passes its imports per instance: each shell gets its own.
    instantiation: 'sync',
    quiet: true,
    noTypescript: true,
  });
  const tmp = `${outDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  for (const [file, content] of Object.entries(files)) {
    const at = join(tmp, file);
    mkdirSync(dirname(at), { recursive: true });
    writeFileSync(at, content);
  }
  try {
    renameSync(tmp, outDir);
  } catch (e) {
    // Another process got there first with the same content.
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(join(outDir, `${NAME}.js`))) throw e;
  }
  return { outDir, sha256, size: bytes.length };
}

/**
 * A transpiled component, its core modules compiled once, ready to
 * instantiate any number of times.
 */
export class PluginComponent {
  constructor(instantiate, getCoreModule, info) {
    this.instantiateWith = instantiate;
    this.getCoreModule = getCoreModule;
    this.sha256 = info.sha256;
    this.size = info.size;
    this.path = info.path;
  }

  /** Instantiates the component with `imports` (see host-imports.js). */
  instantiate(imports) {
    // The linear memories of the instance's core modules, for `memoryBytes`.
    const memories = [];
    const instantiateCore = (module, importObject) => {
      const instance = new WebAssembly.Instance(module, importObject);
      for (const value of Object.values(instance.exports)) {
        if (value instanceof WebAssembly.Memory) memories.push(value);
      }
      return instance;
    };
    let root;
    try {
      root = this.instantiateWith(this.getCoreModule, imports, instantiateCore);
    } catch (e) {
      // A newer contract's import this host does not implement yet.
      if (/undefined instance import/.test(e.message)) {
        e.message += ' (the host imports are in hosts/js/src/host-imports.js)';
      }
      throw e;
    }
    this.#memories.set(root.restriction, memories);
    return root.restriction;
  }

  /** The bytes of linear memory the instance whose exports are `exports` holds now. */
  memoryBytes(exports) {
    return (this.#memories.get(exports) ?? []).reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
  }

  #memories = new WeakMap();
}

const loaded = new Map();

/** Loads (transpiling if needed) and compiles the component at `path`. */
export async function loadComponent(path = componentPath()) {
  if (loaded.has(path)) return loaded.get(path);
  const { outDir, sha256, size } = await transpiled(path);
  const { instantiate } = await import(pathToFileURL(join(outDir, `${NAME}.js`)).href);
  // jco names each core module the component holds; compile each once, on
  // first use.
  const modules = new Map();
  const getCoreModule = (file) => {
    if (!modules.has(file)) {
      modules.set(file, new WebAssembly.Module(readFileSync(join(outDir, file))));
    }
    return modules.get(file);
  };
  const component = new PluginComponent(instantiate, getCoreModule, { sha256, size, path });
  loaded.set(path, component);
  return component;
}
