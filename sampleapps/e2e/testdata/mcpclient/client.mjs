// Drives one sample app's `mcp --stdio` with the official MCP TypeScript
// client: initialize, tools/list, then the tools/call plan given as JSON.
// Prints one JSON document on stdout: {server, tools, results}.
//
// usage: node client.mjs <app binary> <data dir> '<plan: [{name, arguments}]>'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, dataDir, planJSON] = process.argv.slice(2);
const plan = JSON.parse(planJSON ?? "[]");

const transport = new StdioClientTransport({
  command: bin,
  args: ["--data", dataDir, "mcp", "--stdio"],
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TZ: process.env.TZ ?? "UTC" },
  stderr: "inherit",
});
const client = new Client({ name: "sampleapps-e2e", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const results = [];
for (const call of plan) {
  try {
    const r = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
    results.push({
      isError: r.isError === true,
      text: r.content?.[0]?.type === "text" ? r.content[0].text : null,
      structured: r.structuredContent ?? null,
    });
  } catch (e) {
    results.push({ rpcError: { code: e.code ?? null, message: String(e.message) } });
  }
}
await client.close();

process.stdout.write(
  JSON.stringify({
    server: client.getServerVersion() ?? null,
    tools: tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null, inputSchema: t.inputSchema })),
    results,
  }) + "\n",
);
