// A plugin as the shell sees it, written in JavaScript: `instantiate(imports)`
// gives the `restriction` exports. It calls the very imports a transpiled
// component gets (host-imports.js), so a test can act as a hostile plugin
// would: write to stdout, read stdin, exit, trap, log without end.

/** A component whose exports pass and show everything, but for `overrides(imports)`. */
export function fakeComponent(overrides = () => ({})) {
  return {
    instantiate(imports) {
      const host = imports['dsh:tool-restriction/host'];
      const base = {
        configure() {},
        guardTools: () => [],
        agentCreated() {},
        agentDisposed() {},
        agentForked() {},
        registryChanged() {},
        visibleTools: (agent) => host.allowedTools(agent).val,
        preExecute: () => ({ tag: 'pass' }),
        execute: (_agent, tool) => ({ json: JSON.stringify({ ran: tool }), text: `ran ${tool}`, isError: false }),
        resolveCall: () => ({ tag: 'direct' }),
        systemPrompt: () => undefined,
        explainLocated() {
          throw { payload: { tag: 'not-configured' } };
        },
        exportState: () => '{}',
        restoreState() {},
        dispose() {},
      };
      return Object.assign(base, overrides(imports));
    },
  };
}
