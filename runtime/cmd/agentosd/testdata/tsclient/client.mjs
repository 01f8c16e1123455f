// Drives `agentosd stdio` with the official ACP TypeScript client and
// prints one JSON object describing what the client received. Usage:
//   node client.mjs <agentosd binary> <data dir>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, data] = process.argv.slice(2);
const child = spawn(bin, ["stdio", "--data", data], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
let onUpdate = () => {};
const app = acp.client({ name: "agentos-conformance" }).onNotification(
  acp.methods.client.session.update,
  (ctx) => {
    updates.push(ctx.params);
    onUpdate(ctx.params);
  },
);

// A prompt whose first line is #!agentos-script is answered by that script.
const script = (lines) => [{ type: "text", text: "#!agentos-script\n" + lines.join("\n") }];
const kinds = (list) => list.map((u) => u.update.sessionUpdate);
const text = (list, kind) =>
  list.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content.text).join("");

const out = {};
await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    _meta: { "org.agentos": { extensions: ["sessionSetup"] } },
  });
  out.initialize = {
    protocolVersion: init.protocolVersion,
    agentName: init.agentInfo?.name,
    loadSession: init.agentCapabilities?.loadSession,
    profile: init._meta?.["org.agentos"]?.profile,
  };

  const created = await ctx.request(acp.methods.agent.session.new, { cwd: "/conformance", mcpServers: [] });
  const sessionId = created.sessionId;
  out.newSession = { sessionId, modes: created.modes?.availableModes?.map((m) => m.id) };

  updates.length = 0;
  const prompt = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: script(['steps:', '  - text: ["Hello", " from", " the script."]', "    intervalMs: 20"]),
  });
  out.prompt = {
    stopReason: prompt.stopReason,
    taskId: prompt._meta?.["org.agentos"]?.taskId,
    text: text(updates, "agent_message_chunk"),
    kinds: kinds(updates),
  };

  updates.length = 0;
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: "/conformance", mcpServers: [] });
  const marker = updates.find((u) => u.update.sessionUpdate === "session_info_update");
  out.load = {
    kinds: kinds(updates),
    user: text(updates, "user_message_chunk"),
    agent: text(updates, "agent_message_chunk"),
    replayed: marker?.update?._meta?.["org.agentos"]?.setup?.replayed,
  };

  const list = await ctx.request(acp.methods.agent.session.list, {});
  out.list = list.sessions.map((s) => ({ sessionId: s.sessionId, title: s.title, hasUpdatedAt: !!s.updatedAt }));

  // Cancel a slow turn once its first words have arrived.
  updates.length = 0;
  const firstChunk = new Promise((resolve) => {
    onUpdate = (u) => u.update.sessionUpdate === "agent_message_chunk" && resolve();
  });
  const slow = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: script([
      "steps:",
      '  - text: ["one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight "]',
      "    intervalMs: 400",
    ]),
  });
  await firstChunk;
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  const cancelled = await slow;
  out.cancel = {
    stopReason: cancelled.stopReason,
    taskId: cancelled._meta?.["org.agentos"]?.taskId,
    chunks: kinds(updates).filter((k) => k === "agent_message_chunk").length,
  };
});

child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
out.exitCode = code;
process.stdout.write(JSON.stringify(out) + "\n");
