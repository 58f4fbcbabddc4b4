// Plays an editor against `rein acp` with the Agent Client Protocol's
// TypeScript client library, and prints what it saw as JSON on stdout:
// {"first": [...], "cancelled": [...], "stops": [...], "replay": [...], "after": [...]}.
// The trace lines have the shape of rein's Go test client (acp/acptest).
//
// Usage: REIN_ACP='["/path/to/rein","acp",...]' REIN_WORK=/abs/dir node client.mjs
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const argv = JSON.parse(process.env.REIN_ACP);
const work = process.env.REIN_WORK;
const answers = ["allow-once", "reject", "allow-once"];

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

function editor() {
  return acp
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
