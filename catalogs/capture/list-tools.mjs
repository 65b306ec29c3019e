// Captures the `tools/list` output of npm MCP servers into a catalog in the
// `catalogs/*.json` format. Reproduce `catalogs/npm-servers.json` with:
//   cd catalogs/capture && npm install --ignore-scripts && node list-tools.mjs > ../npm-servers.json
// Each server runs over stdio with placeholder credentials: listing tools needs none of
// them, and no tool is called.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const servers = JSON.parse(readFileSync(new URL("./servers.json", import.meta.url)));

function manifest(pkg) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url)));
}

function entry(pkg, bin) {
  const { name, bin: declared } = manifest(pkg);
  const bins = typeof declared === "string" ? { [name]: declared } : declared;
  const path = bins[bin ?? Object.keys(bins)[0]];
  return fileURLToPath(new URL(`./node_modules/${pkg}/${path.replace(/^\.\//, "")}`, import.meta.url));
}

const out = {
  source: "tools/list output captured over stdio from the npm packages named per server (catalogs/capture)",
  servers: [],
};
for (const server of servers) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [entry(server.package, server.bin), ...(server.args ?? [])],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...(server.env ?? {}) },
    stderr: "ignore",
  });
  const client = new Client({ name: "lazy-tools-capture", version: "1.0.0" });
  try {
    await client.connect(transport);
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const { version, description } = manifest(server.package);
    const pkg = `${server.package} ${version}`;
    out.servers.push({
      name: server.name,
      // The package's own description, as published.
      description: description ?? "",
      package: pkg,
      tools,
    });
    console.error(`${server.name}: ${tools.length} tools`);
  } catch (e) {
    console.error(`${server.name}: ${e.message}`);
  } finally {
    await client.close().catch(() => {});
  }
}
console.log(JSON.stringify(out, null, 1));
