// The lazy-tools component as JavaScript: the very `.wasm` that cargo builds,
// transpiled by jco into ES modules plus core wasm modules, kept on disk by
// the component's sha256, compiled once per process, instantiated per shell,
// each instance on a thread of its own (plugin-thread.js).

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { transpile } from '@bytecodealliance/jco';

import { MAX_COMPONENT_BYTES, readBounded } from './bounded.js';
import { CALL_LIMIT_MS, LONG_CALL_LIMIT_MS, startWorker, threadedExports } from './plugin-thread.js';

/** The repository's root (hosts/js/src -> ../../..). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const NAME = 'lazy_tools';

/**
 * Where host-harness's build script puts the component: a release or bench build of the
 * harness builds the shipped one, a debug build (`cargo run`, `cargo test`) the quicker one.
 */
export const BUILT_COMPONENTS = ['release', 'wasm-quick'].map((profile) =>
  join(REPO_ROOT, `target/wasm/wasm32-wasip2/${profile}/lazy_tools.wasm`),
);

/**
 * The component to run: `$LAZY_TOOLS_COMPONENT` (the Rust test that runs
 * this host passes the one cargo built), else the first of {@link BUILT_COMPONENTS} that exists.
 */
export function componentPath() {
  return (
    process.env.LAZY_TOOLS_COMPONENT ||
    BUILT_COMPONENTS.find((path) => existsSync(path)) ||
    BUILT_COMPONENTS[0]
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
        '(its build script builds the plugin for wasm32-wasip2, into ' +
        `${BUILT_COMPONENTS.join(' or ')}) or set LAZY_TOOLS_COMPONENT`,
    );
  }
  // LAZY_TOOLS_COMPONENT may name anything: a FIFO or /dev/zero is refused, not waited on.
  const bytes = readBounded(path, MAX_COMPONENT_BYTES, 'a component');
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
 * instantiate any number of times. Each instance runs on a thread of its
 * own, every call into it under a deadline (plugin-thread.js): `limits`
 * holds them, in milliseconds (`call`, `longCall`: the Rust harness's).
 */
export class PluginComponent {
  constructor(glue, modules, info, limits = DEFAULT_LIMITS) {
    this.glue = glue;
    this.modules = modules;
    this.info = info;
    this.sha256 = info.sha256;
    this.size = info.size;
    this.path = info.path;
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...limits });
  }

  /** The same component, its instances under other deadlines (`{call, longCall}`, ms). */
  withLimits(limits) {
    return new PluginComponent(this.glue, this.modules, this.info, { ...this.limits, ...limits });
  }

  /**
   * Instantiates the component with `imports` (see host-imports.js) on a
   * thread of its own; its `restriction` exports, each a call across.
   */
  instantiate(imports) {
    // A worker of an instance let go serves the next one, its JavaScript
    // loaded and compiled; and a component instantiated more than once keeps
    // a worker loading it for the next instance, beside the shell's work.
    const started = this.#idle.pop() ?? startWorker(this.glue, this.modules);
    if (this.#idle.length === 0 && this.#instances++ > 0) this.#idle.push(startWorker(this.glue, this.modules));
    let made;
    try {
      made = threadedExports(started, imports, this.limits, (worker) => {
        if (this.#idle.length >= MAX_IDLE_WORKERS) return false;
        this.#idle.push(worker);
        return true;
      });
    } catch (e) {
      // A newer contract's import this host does not implement yet.
      if (/undefined instance import/.test(e.message)) {
        e.message += ' (the host imports are in hosts/js/src/host-imports.js)';
      }
      throw e;
    }
    this.#threads.set(made.exports, made.thread);
    return made.exports;
  }

  /** The thread of the instance whose exports are `exports` (plugin-thread.js). */
  threadOf(exports) {
    return this.#threads.get(exports);
  }

  /** The bytes of linear memory the instance whose exports are `exports` held at the end of its last call. */
  memoryBytes(exports) {
    return this.#threads.get(exports)?.memory ?? 0;
  }

  #threads = new WeakMap();
  /** Workers ready for the next instance, the one most recently used last. */
  #idle = [];
  #instances = 0;
}

/** The most workers a component keeps ready for its next instances. */
const MAX_IDLE_WORKERS = 2;

/** The deadlines of a plugin call, as the Rust harness's `Limits`. */
export const DEFAULT_LIMITS = Object.freeze({ call: CALL_LIMIT_MS, longCall: LONG_CALL_LIMIT_MS });

const loaded = new Map();

/** Loads (transpiling if needed) and compiles the component at `path`. */
export async function loadComponent(path = componentPath()) {
  if (loaded.has(path)) return loaded.get(path);
  const { outDir, sha256, size } = await transpiled(path);
  // jco names each core module the component holds: each is compiled once
  // here, and every instance's thread gets the compiled module.
  const modules = Object.fromEntries(
    readdirSync(outDir)
      .filter((file) => file.endsWith('.wasm'))
      .map((file) => [file, new WebAssembly.Module(readFileSync(join(outDir, file)))]),
  );
  const glue = pathToFileURL(join(outDir, `${NAME}.js`)).href;
  const component = new PluginComponent(glue, modules, { sha256, size, path });
  loaded.set(path, component);
  return component;
}
