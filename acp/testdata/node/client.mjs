// Plays an editor against `rein acp` with the Agent Client Protocol's
// TypeScript client library, and prints what it saw as JSON on stdout:
// {"first": [...], "cancelled": [...], "stops": [...], "replay": [...], "after": [...]}.
// The trace lines have the shape of rein's Go test client (acp/acptest).
//
// With REIN_SCENARIO=editor it plays an editor that offers its file system
// and terminals instead, and prints {"requests": [...], "stops": [...]}:
// the file and terminal requests rein made of it.
//
// Usage: REIN_ACP='["/path/to/rein","acp",...]' REIN_WORK=/abs/dir node client.mjs
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const argv = JSON.parse(process.env.REIN_ACP);
const work = process.env.REIN_WORK;
const scenario = process.env.REIN_SCENARIO || "session";
const answers = scenario === "editor" ? ["allow-once", "allow-once"] : ["allow-once", "reject", "allow-once"];

let trace = [];
let lastKind = "";
let inProgress = null; // resolves when a call is running

function record(kind, line, merge) {
  if (merge && lastKind === kind && trace.length > 0) {
    trace[trace.length - 1] += line;
  } else {
    trace.push(kind + line);
  }
  lastKind = merge ? kind : "";
}

function text(block) {
  return block && block.type === "text" ? block.text : "<non-text>";
}

// q quotes like Go's %q for the strings these tests use.
function q(s) {
  return JSON.stringify(s);
}

function onUpdate(u) {
  switch (u.sessionUpdate) {
    case "agent_message_chunk":
      return record("agent: ", text(u.content), true);
    case "agent_thought_chunk":
      return record("thought: ", text(u.content), true);
    case "user_message_chunk":
      return record("user: ", text(u.content), true);
    case "tool_call": {
      let line = `${u.toolCallId} ${u.kind} ${u.status} ${q(u.title)}`;
      for (const l of u.locations ?? []) line += " @" + l.path;
      return record("tool_call ", line, false);
    }
    case "tool_call_update": {
      let line = u.toolCallId;
      if (u.status) line += " " + u.status;
      for (const c of u.content ?? []) {
        if (c.type === "diff") {
          const old = c.oldText == null ? "<new>" : q(c.oldText);
          line += ` diff ${c.path} ${old}→${q(c.newText)}`;
        } else if (c.type === "content") {
          line += " " + q(text(c.content));
        }
      }
      if (u.status === "in_progress" && inProgress) inProgress(u.toolCallId);
      return record("update ", line, false);
    }
    case "plan":
      return record("plan ", u.entries.map((e) => `[${e.status}] ${e.content}`).join(", "), false);
    default:
      return record("other", "", false);
  }
}

// The editor's open buffers and terminals, for the editor scenario.
const buffers = new Map();
const terminals = new Map();
const requests = [];

function createTerminal(params) {
  const id = "term" + (terminals.size + 1);
  const env = { ...process.env };
  for (const v of params.env ?? []) env[v.name] = v.value;
  requests.push(`terminal ${params.command} ${(params.args ?? []).join(" ")}`);
  const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? work, env, stdio: ["ignore", "pipe", "pipe"] });
  const t = { child, out: "", limit: params.outputByteLimit ?? 0, status: null };
  t.exited = new Promise((resolve) =>
    child.on("exit", (code, signal) => {
      t.status = { exitCode: code, signal: signal ? "signal: " + signal : null };
      resolve(t.status);
    }),
  );
  const take = (b) => {
    t.out += b.toString();
    if (t.limit > 0 && t.out.length > t.limit) t.out = t.out.slice(t.out.length - t.limit);
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  terminals.set(id, t);
  return { terminalId: id };
}

function editor() {
  const c = acp
    .client({ name: "rein-test-editor" })
    .onNotification(acp.methods.client.session.update, ({ params }) => onUpdate(params.update))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const id = params.toolCall.toolCallId;
      if (answers.length === 0) {
        record("permission ", `${id} cancelled`, false);
        return { outcome: { outcome: "cancelled" } };
      }
      const a = answers.shift();
      record("permission ", `${id} ${a}`, false);
      return { outcome: { outcome: "selected", optionId: a } };
    });
  if (scenario !== "editor") return c;
  return c
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      requests.push("fs read " + params.path);
      return { content: buffers.get(params.path) ?? readFileSync(params.path, "utf8") };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      requests.push("fs write " + params.path);
      writeFileSync(params.path, params.content);
      if (buffers.has(params.path)) buffers.set(params.path, params.content);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, ({ params }) => createTerminal(params))
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const t = terminals.get(params.terminalId);
      return { output: t.out, truncated: false, ...(t.status ? { exitStatus: t.status } : {}) };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => terminals.get(params.terminalId).exited)
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      terminals.get(params.terminalId).child.kill("SIGKILL");
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
      const t = terminals.get(params.terminalId);
      t.child.kill("SIGKILL");
      await t.exited;
      requests.push(`terminal ${params.terminalId} released`);
      return {};
    });
}

// withRein starts rein, runs op with a connected client context, and waits
// for rein to exit after its stdin closes.
async function withRein(op) {
  const child = spawn(argv[0], argv.slice(1), { cwd: work, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const out = await editor().connectWith(stream, op);
  child.stdin.end();
  const { code, signal } = await exited;
  if (code !== 0) throw new Error(`rein acp exited with ${code ?? signal}`);
  return out;
}

const result = { stops: [] };
const init = { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} };

if (scenario === "editor") {
  const a = work + "/a.txt";
  buffers.set(a, "old\nunsaved\n");
  await withRein(async (ctx) => {
    const caps = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
    await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });
    const r = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "edit a.txt and run it" }],
    });
    result.stops.push(r.stopReason);
    await ctx.request(acp.methods.agent.session.close, { sessionId });
  });
  result.requests = requests;
  result.buffer = buffers.get(a);
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(0);
}

const sessionId = await withRein(async (ctx) => {
  const ini = await ctx.request(acp.methods.agent.initialize, init);
  if (!ini.agentCapabilities?.loadSession) throw new Error("rein does not advertise session/load");
  const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });
  const r1 = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "update the files" }],
  });
  result.stops.push(r1.stopReason);
  result.first = trace;

  trace = [];
  const running = new Promise((resolve) => (inProgress = resolve));
  const p2 = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "wait a while" }],
  });
  await running;
  inProgress = null;
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  result.stops.push((await p2).stopReason);
  result.cancelled = trace;
  return sessionId;
});

trace = [];
await withRein(async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, init);
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: work, mcpServers: [] });
  result.replay = trace;
  trace = [];
  const r3 = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "still there?" }],
  });
  result.stops.push(r3.stopReason);
  result.after = trace;
});

process.stdout.write(JSON.stringify(result) + "\n");
