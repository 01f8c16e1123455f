// The official ACP TypeScript client (@agentclientprotocol/sdk) driving a
// device's runtime through `agentlab bridge` (spec §10.9). The lab's
// acp_client step runs it with its configuration in $AGENTLAB_ACP_CLIENT:
//   {suite: "device" | "pairing", bridge: [command, args…], code, work}
// bridge is how to start a bridge (the step adds --state); code is a fresh
// pairing code; work a folder for state files. It prints one JSON line:
//   {suite, tests: {NAME: {ok, skipped, detail}}, passed, failed, skipped}
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const cfg = JSON.parse(process.env.AGENTLAB_ACP_CLIENT ?? "{}");
const tests = {};

// test runs one named test: it passes unless fn throws.
async function test(name, fn) {
  try {
    const detail = await fn();
    tests[name] = { ok: true, skipped: false, detail: detail === undefined ? "" : String(detail) };
  } catch (e) {
    tests[name] = { ok: false, skipped: false, detail: String(e?.message ?? e) };
  }
}
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
function eq(got, want, what) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
  return g;
}
// refused awaits a request that must fail and returns its error.
async function refused(p, what) {
  try {
    const r = await p;
    throw new Error(`${what}: answered ${JSON.stringify(r)}`);
  } catch (e) {
    if (e?.code === undefined) throw e;
    return e;
  }
}

// withBridge starts one bridge (state file, optional code), connects the
// SDK's client to it, runs fn({ctx, updates, onUpdate}) and returns
// {result, error, exitCode, stderr} once the bridge has exited.
async function withBridge({ state, code }, fn) {
  const env = { ...process.env };
  delete env.AGENTOS_PAIRING_CODE;
  delete env.AGENTLAB_ACP_CLIENT;
  if (code) env.AGENTOS_PAIRING_CODE = code;
  const [cmd, ...args] = cfg.bridge;
  const child = spawn(cmd, [...args, "--state", state], { stdio: ["pipe", "pipe", "pipe"], env });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("exit", (c) => resolve(c)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const updates = [];
  const hooks = { onUpdate: () => {} };
  const app = acp.client({ name: "agentlab-acp-conformance" }).onNotification(
    acp.methods.client.session.update,
    (c) => {
      updates.push(c.params);
      hooks.onUpdate(c.params);
    },
  );
  let result, error;
  try {
    await app.connectWith(stream, async (ctx) => {
      result = await fn({ ctx, updates, hooks });
    });
  } catch (e) {
    error = e;
  } finally {
    child.stdin.end();
  }
  const exitCode = await exited;
  return { result, error, exitCode, stderr };
}

const script = (lines) => [{ type: "text", text: "#!agentos-script\n" + lines.join("\n") }];
const kinds = (list) => list.map((u) => u.update.sessionUpdate);
const text = (list, kind) =>
  list.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content?.text ?? "").join("");
const initParams = (extensions = ["sessionSetup"]) => ({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "agentlab-acp-conformance", version: "1" },
  _meta: { "org.agentos": { extensions } },
});
const agentos = (x) => x?._meta?.["org.agentos"];

// The device suite: every ACP method the runtime serves, through one
// paired bridge, as an editor would call them.
async function deviceSuite() {
  const state = join(cfg.work, "device.json");
  const run = await withBridge({ state, code: cfg.code }, async ({ ctx, updates, hooks }) => {
    let init;
    await test("initialize", async () => {
      init = await ctx.request("initialize", initParams());
      return eq(init.protocolVersion, 1, "protocolVersion");
    });
    const caps = init?.agentCapabilities ?? {};
    await test("initializeAgentInfo", () => eq([init?.agentInfo?.name, init?.agentInfo?.title], ["agentos", "AgentOS"], "agentInfo"));
    await test("initializeLoadSession", () => eq(caps.loadSession, true, "loadSession"));
    await test("initializePromptCapabilities", () =>
      eq([caps.promptCapabilities?.image, caps.promptCapabilities?.audio, caps.promptCapabilities?.embeddedContext], [false, false, true], "image, audio, embeddedContext"));
    await test("initializeMcpCapabilities", () => eq(caps.mcpCapabilities?.sse, false, "sse"));
    await test("initializeNoAuthMethods", () => eq(init?.authMethods ?? [], [], "authMethods"));
    await test("initializeAgentosProfile", () => {
      const m = agentos(init);
      expect(m?.extensions?.sessionSetup !== undefined, "sessionSetup not negotiated");
      return eq(m?.profile, 1, "profile");
    });

    let s;
    updates.length = 0;
    await test("newSessionId", async () => {
      s = await ctx.request("session/new", { cwd: "/conformance", mcpServers: [] });
      expect(/^ses_[0-9A-Z]{26}$/.test(s.sessionId), `sessionId ${s.sessionId}`);
      return s.sessionId;
    });
    const sid = s?.sessionId;
    await test("newSessionModes", () => {
      const ids = (s?.modes?.availableModes ?? []).map((m) => m.id);
      expect(ids.includes("default") && ids.includes("read_only"), `modes ${JSON.stringify(ids)}`);
      return eq(s?.modes?.currentModeId, "default", "currentModeId");
    });
    await test("newSessionConfigOptions", () => {
      const ids = (s?.configOptions ?? []).map((o) => o.id);
      expect(ids.includes("mode"), `configOptions ${JSON.stringify(ids)}`);
      return ids.join(",");
    });

    updates.length = 0;
    let p;
    await test("promptEndTurn", async () => {
      p = await ctx.request("session/prompt", {
        sessionId: sid,
        prompt: script(["steps:", '  - text: ["Hello", " from", " the script."]']),
      });
      return eq(p.stopReason, "end_turn", "stopReason");
    });
    const promptUpdates = [...updates];
    await test("promptStreamsChunks", () => eq(text(promptUpdates, "agent_message_chunk"), "Hello from the script.", "agent text"));
    await test("promptTaskId", () => {
      expect(/^tsk_[0-9A-Z]{26}$/.test(agentos(p)?.taskId ?? ""), `taskId ${agentos(p)?.taskId}`);
      return agentos(p).taskId;
    });
    await test("promptNoUserEcho", () => {
      expect(!kinds(promptUpdates).includes("user_message_chunk"), `kinds ${kinds(promptUpdates)}`);
    });
    await test("promptResourceLink", async () => {
      const r = await ctx.request("session/prompt", { sessionId: sid, prompt: [{ type: "resource_link", uri: "file:///x.txt", name: "x.txt" }] });
      return eq(r.stopReason, "end_turn", "stopReason");
    });
    await test("promptEmptyRefused", async () => {
      const e = await refused(ctx.request("session/prompt", { sessionId: sid, prompt: [] }), "empty prompt");
      eq(e.code, -32602, "code");
      return eq(e.data?.agentosCode, "invalid_params", "agentosCode");
    });
    await test("promptImageUnsupported", async () => {
      const e = await refused(ctx.request("session/prompt", { sessionId: sid, prompt: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }), "image");
      eq(e.code, -32602, "code");
      return eq(e.data?.agentosCode, "unsupported", "agentosCode");
    });

    // A tool call: the scenario enables mcptest's echo and sets consent
    // mode allow, so the call is asked on the phone and answered there.
    updates.length = 0;
    let tp;
    await test("promptToolCall", async () => {
      tp = await ctx.request("session/prompt", {
        sessionId: sid,
        prompt: script(["steps:", "  - toolCalls:", "      - mcp: [mcptest, test, echo]", "        arguments: {text: conformance-echo}", "final: echoed"]),
      });
      const calls = updates.filter((u) => u.update.sessionUpdate === "tool_call");
      eq(calls.length, 1, "tool_call updates");
      return eq(agentos(calls[0].update)?.toolName, "mcp__mcptest__test__echo", "toolName");
    });
    await test("promptToolCallCompleted", () => {
      const done = updates.filter((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "completed");
      eq(done.length, 1, "completed tool_call_update");
      const out = JSON.stringify(done[0].update.content ?? done[0].update.rawOutput ?? "");
      expect(out.includes("conformance-echo"), `result ${out}`);
      return eq(tp?.stopReason, "end_turn", "stopReason");
    });

    updates.length = 0;
    let cancelled, chunks = 0;
    await test("cancelStopReason", async () => {
      const first = new Promise((resolve) => {
        hooks.onUpdate = (u) => u.update.sessionUpdate === "agent_message_chunk" && resolve();
      });
      const slow = ctx.request("session/prompt", {
        sessionId: sid,
        prompt: script(["steps:", '  - text: ["one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight "]', "    intervalMs: 400"]),
      });
      await first;
      hooks.onUpdate = () => {};
      await ctx.notify("session/cancel", { sessionId: sid });
      cancelled = await slow;
      chunks = kinds(updates).filter((k) => k === "agent_message_chunk").length;
      return eq(cancelled.stopReason, "cancelled", "stopReason");
    });
    await test("cancelStopsStream", () => {
      expect(chunks >= 1 && chunks < 8, `${chunks} of 8 chunks arrived`);
      return `${chunks} of 8 chunks`;
    });

    updates.length = 0;
    await test("loadReplaysHistory", async () => {
      await ctx.request("session/load", { sessionId: sid, cwd: "/conformance", mcpServers: [] });
      expect(text(updates, "user_message_chunk").length > 0, "no user message replayed");
      expect(text(updates, "agent_message_chunk").includes("Hello from the script."), "first answer not replayed");
    });
    await test("loadReplayedMarker", () => {
      const marker = updates.find((u) => agentos(u.update)?.setup?.replayed !== undefined);
      expect(marker, "no sessionSetup marker");
      expect(agentos(marker.update).setup.replayed > 0, `replayed ${agentos(marker.update).setup.replayed}`);
      return agentos(marker.update).setup.replayed;
    });

    let list;
    await test("listListsSession", async () => {
      list = await ctx.request("session/list", {});
      expect(list.sessions.some((x) => x.sessionId === sid), "session not listed");
      return list.sessions.length;
    });
    await test("listUpdatedAt", () => {
      const mine = list?.sessions?.find((x) => x.sessionId === sid);
      expect(mine && !Number.isNaN(Date.parse(mine.updatedAt)), `updatedAt ${mine?.updatedAt}`);
      return mine.updatedAt;
    });

    updates.length = 0;
    await test("resumeNoReplay", async () => {
      await ctx.request("session/resume", { sessionId: sid, cwd: "/conformance", mcpServers: [] });
      expect(!kinds(updates).includes("user_message_chunk"), "resume replayed the history");
    });
    let f;
    await test("forkNewSession", async () => {
      f = await ctx.request("session/fork", { sessionId: sid, cwd: "/conformance", mcpServers: [] });
      expect(f.sessionId && f.sessionId !== sid, `fork ${f.sessionId}`);
      return f.sessionId;
    });
    await test("setModeReadOnly", async () => {
      await ctx.request("session/set_mode", { sessionId: sid, modeId: "read_only" });
      const r = await ctx.request("session/load", { sessionId: sid, cwd: "/conformance", mcpServers: [] });
      return eq(r.modes?.currentModeId, "read_only", "mode after load");
    });
    await test("setModeUnknownRefused", async () => {
      const e = await refused(ctx.request("session/set_mode", { sessionId: sid, modeId: "superuser" }), "mode superuser");
      return eq(e.code, -32602, "code");
    });
    await test("setConfigOptionMode", async () => {
      // A mode only narrows: default, read_only, then chat.
      await ctx.request("session/set_config_option", { sessionId: sid, configId: "mode", value: "chat" });
      const r = await ctx.request("session/load", { sessionId: sid, cwd: "/conformance", mcpServers: [] });
      return eq(r.modes?.currentModeId, "chat", "mode after load");
    });
    await test("setModelCustomEndpoint", async () => {
      const e = await refused(ctx.request("session/set_model", { sessionId: sid, modelId: "gpt-4o" }), "set_model");
      return eq(e.data?.agentosCode, "unsupported", "agentosCode");
    });
    await test("closeSession", async () => {
      const r = await ctx.request("session/close", { sessionId: sid });
      expect(r !== undefined, "no answer");
    });
    await test("deleteSession", async () => {
      await ctx.request("session/delete", { sessionId: f?.sessionId });
      const l = await ctx.request("session/list", {});
      expect(!l.sessions.some((x) => x.sessionId === f?.sessionId), "deleted session still listed");
    });
    await test("deletedLoadNotFound", async () => {
      const e = await refused(ctx.request("session/load", { sessionId: f?.sessionId, cwd: "/", mcpServers: [] }), "load of a deleted session");
      eq(e.code, -32002, "code");
      return eq(e.data?.agentosCode, "session_not_found", "agentosCode");
    });
    await test("unknownMethod", async () => {
      const e = await refused(ctx.request("session/teleport", {}), "session/teleport");
      return eq(e.code, -32601, "code");
    });
    await test("authenticateNotEnabled", async () => {
      const e = await refused(ctx.request("authenticate", { methodId: "x" }), "authenticate");
      return eq(e.code, -32601, "code");
    });
    await test("missingSessionId", async () => {
      const e = await refused(ctx.request("session/prompt", { prompt: [{ type: "text", text: "x" }] }), "prompt without sessionId");
      eq(e.code, -32602, "code");
      return eq(e.data?.agentosCode, "invalid_params", "agentosCode");
    });
    await test("unknownSession", async () => {
      const e = await refused(
        ctx.request("session/prompt", { sessionId: "ses_00000000000000000000000000", prompt: [{ type: "text", text: "x" }] }),
        "prompt of an unknown session",
      );
      return eq(e.data?.agentosCode, "session_not_found", "agentosCode");
    });
  });
  if (run.error) throw new Error(`device suite: ${run.error?.message ?? run.error}\n${run.stderr}`);
}

// The pairing suite: how the bridge pairs, remembers and refuses.
async function pairingSuite() {
  const good = cfg.code;
  const wrong = good.slice(0, -1) + String((Number(good.at(-1)) + 1) % 10);
  const state = join(cfg.work, "pairing.json");
  const initOnly = async ({ ctx }) => ctx.request("initialize", initParams());

  const bad = await withBridge({ state, code: wrong }, initOnly);
  await test("wrongCodeRefused", () => {
    expect(bad.error?.code !== undefined, `initialize answered ${JSON.stringify(bad.result)}`);
    return bad.error.message;
  });
  await test("refusalSaysWhy", () => {
    const m = bad.error?.message ?? "";
    expect(m.includes("invalid_code") || /code/i.test(m), `message ${m}`);
    expect(m.includes("bridge"), `no command to pair in ${m}`);
    return m;
  });
  await test("refusedExitCode", () => eq(bad.exitCode, 3, "exit code"));

  const paired = await withBridge({ state, code: good }, async ({ ctx }) => {
    const init = await ctx.request("initialize", initParams());
    const s = await ctx.request("session/new", { cwd: "/", mcpServers: [] });
    return { init, s };
  });
  await test("pairsWithCode", () => {
    expect(!paired.error, `refused: ${paired.error?.message}`);
    return eq(paired.result?.init?.protocolVersion, 1, "protocolVersion");
  });
  await test("tokenStored", () => {
    expect(existsSync(state), "no state file");
    const raw = readFileSync(state, "utf8");
    const st = JSON.parse(raw);
    const devs = Object.values(st.devices ?? {});
    eq(devs.length, 1, "paired devices");
    expect(typeof devs[0].token === "string" && devs[0].token.length >= 16, "no token");
    expect(!raw.includes(good), "the state file holds the pairing code");
  });

  const again = await withBridge({ state }, async ({ ctx }) => {
    await ctx.request("initialize", initParams());
    return ctx.request("session/new", { cwd: "/", mcpServers: [] });
  });
  await test("tokenReconnects", () => {
    expect(!again.error, `refused: ${again.error?.message}`);
    expect(again.result?.sessionId, "no session");
    return eq(again.exitCode, 0, "exit code");
  });

  const fresh = join(cfg.work, "fresh.json");
  const reuse = await withBridge({ state: fresh, code: good }, initOnly);
  await test("codeSingleUse", () => {
    expect(reuse.error?.code !== undefined, "a used code paired again");
    return eq(reuse.exitCode, 3, "exit code");
  });

  const forged = join(cfg.work, "forged.json");
  const st = JSON.parse(readFileSync(state, "utf8"));
  for (const d of Object.values(st.devices)) d.token = d.token.split("").reverse().join("");
  writeFileSync(forged, JSON.stringify(st));
  const forgedRun = await withBridge({ state: forged }, initOnly);
  await test("badTokenForgotten", () => {
    expect(forgedRun.error?.code !== undefined, "a forged token was accepted");
    eq(forgedRun.exitCode, 3, "exit code");
    const after = JSON.parse(readFileSync(forged, "utf8"));
    return eq(Object.keys(after.devices ?? {}).length, 0, "tokens kept after invalid_token");
  });

  const stdio = await withBridge({ state }, async ({ ctx, updates, hooks }) => {
    await ctx.request("initialize", initParams());
    // The bridge's notice follows the phone's answer.
    const notice = new Promise((resolve) => {
      hooks.onUpdate = (u) => agentos(u.update)?.bridge && resolve();
      setTimeout(resolve, 5000);
    });
    const s = await ctx.request("session/new", {
      cwd: "/",
      mcpServers: [{ name: "local-tool", command: "/bin/sh", args: [], env: [] }],
    });
    await notice;
    return { s, updates: [...updates] };
  });
  await test("stdioServerDropped", () => {
    expect(!stdio.error, `session/new with a stdio server: ${stdio.error?.message}`);
    const notice = stdio.result.updates.find((u) => agentos(u.update)?.bridge?.droppedMcpServers);
    expect(notice, "no notice of the dropped server");
    return eq(agentos(notice.update).bridge.droppedMcpServers.map((x) => x.name ?? x), ["local-tool"], "dropped");
  });
}

try {
  if (cfg.suite === "device") await deviceSuite();
  else if (cfg.suite === "pairing") await pairingSuite();
  else throw new Error(`unknown suite ${cfg.suite}`);
} catch (e) {
  tests.suiteRan = { ok: false, skipped: false, detail: String(e?.stack ?? e) };
}
const all = Object.values(tests);
process.stdout.write(
  JSON.stringify({
    suite: cfg.suite,
    tests,
    passed: all.filter((t) => t.ok).length,
    failed: all.filter((t) => !t.ok && !t.skipped).length,
    skipped: all.filter((t) => t.skipped).length,
  }) + "\n",
);
