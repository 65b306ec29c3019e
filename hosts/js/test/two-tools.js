// The shell the hostile-plugin tests start from: the built-ins `bash` and
// `read`, and the agent `main`.

import { Shell } from '../src/shell.js';
import { Tool, builtin } from '../src/tools.js';

export function shell() {
  const s = new Shell();
  s.registerTools([new Tool('bash', '', builtin()), new Tool('read', '', builtin())]);
  s.createAgent('main');
  return s;
}

/** The names of `tools`. */
export const names = (tools) => tools.map((t) => t.name);
