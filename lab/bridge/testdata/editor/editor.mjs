// An editor as Zed runs an ACP agent from its settings.json
// "agent_servers" entry, with the official ACP TypeScript client. Usage:
//   node editor.mjs <config.json>
// config.json: {"settings": <settings.json with agent_servers>, "pair": [args],
//               "prompt": "<text>", "stdioServer": {<an ACP stdio McpServer>}}
// It prints one JSON line per event on stdout ({"event":"consent-wait"} while
// a tool call waits for the owner; the test answers the card then) and a
// last line {"result": …} with what the editor saw.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const [name, agent] = Object.entries(config.settings.agent_servers)[0];
const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const out = { agentName: name };

// start runs the agent's command line as the editor does.
function start() {
  const child = spawn(agent.command, agent.args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...(agent.env ?? {}) },
  });
  const state = { stderr: "", exit: new Promise((resolve) => child.on("exit", (code) => resolve(code))) };
  child.stderr.on("data", (b) => (state.stderr += b));
  child.on("error", (e) => (state.stderr += String(e)));
  return { child, state };
}

// session connects to a started agent; onUpdate gets every session/update.
async function session(child, onUpdate, body) {
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp.client({ name: "agentlab-editor-test" }).onNotification(acp.methods.client.session.update, (ctx) =>
    onUpdate(ctx.params),
  );
  await app.connectWith(stream, body);
}

const initialize = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  clientInfo: { name: "zed", version: "test" },
};

// 1. Not paired yet: initialize is answered with an error saying what to do.
{
  const { child, state } = start();
  await session(child, () => {}, async (ctx) => {
    try {
      await ctx.request(acp.methods.agent.initialize, initialize);
      out.unpaired = { answered: "a result" };
    } catch (e) {
      out.unpaired = { code: e.code, message: e.message, data: e.data };
    }
  }).catch((e) => (out.unpairedConnect = String(e)));
  child.stdin.end();
  out.unpaired = { ...(out.unpaired ?? {}), exitCode: await state.exit, stderr: state.stderr };
}

// 2. Pair as the error says.
{
  const r = spawnSync(agent.command, config.pair, { env: process.env, encoding: "utf8" });
  out.pair = { exitCode: r.status, stdout: r.stdout, stderr: r.stderr };
}

// 3. Paired: a session with a stdio MCP server (as Zed forwards its
// context servers), then a prompt whose tool call needs consent.
{
  const { child, state } = start();
  const updates = [];
  let waiters = [];
  const onUpdate = (u) => {
    updates.push(u);
    waiters = waiters.filter((w) => !w(u));
  };
  const until = (match, ms, what) =>
    new Promise((resolve, reject) => {
      const found = updates.find(match);
      if (found) return resolve(found);
      const timer = setTimeout(() => reject(new Error("timed out waiting for " + what)), ms);
      waiters.push((u) => {
        if (!match(u)) return false;
        clearTimeout(timer);
        resolve(u);
        return true;
      });
    });
  await session(child, onUpdate, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, initialize);
    out.initialize = { protocolVersion: init.protocolVersion, agentName: init.agentInfo?.name };
    const created = await ctx.request(acp.methods.agent.session.new, { cwd: "/home/user/project", mcpServers: [config.stdioServer] });
    const sessionId = created.sessionId;
    const notice = await until(
      (u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk",
      5000,
      "the bridge's notice",
    );
    out.newSession = { sessionId, notice: notice.update.content.text, noticeMeta: notice.update._meta };

    const waiting = until(
      (u) => u.update.sessionUpdate === "tool_call_update" && u.update._meta?.["org.agentos"]?.consent === "pending",
      60000,
      "the consent wait",
    ).then((u) => say({ event: "consent-wait", toolCallId: u.update.toolCallId }));
    const prompt = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: config.prompt }],
    });
    await waiting;
    out.prompt = {
      stopReason: prompt.stopReason,
      updates: updates.filter((u) => u.sessionId === sessionId).map((u) => u.update),
    };
  }).catch((e) => (out.error = String(e?.stack ?? e)));
  child.stdin.end();
  out.exitCode = await state.exit;
  out.stderr = state.stderr;
}

say({ result: out });
