import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, test } from "node:test";

import { createPegasusHooks, MEMORY_PREAMBLE, type PegasusHooks } from "../src/hooks.js";

interface Received {
  path: string;
  auth: string | undefined;
  body: Record<string, unknown>;
}

const BLOCK = '[MEMORY]\nBill -[HAS_BOSS]-> Sarah\n\n[CONTEXT]\n- "my boss Sarah moved the deadline"';
let server: Server;
let baseUrl: string;
let received: Received[] = [];
let down = false;
let continuation = "";

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let raw = "";
  for await (const chunk of req) raw += chunk;
  return raw ? JSON.parse(raw) : {};
}

before(async () => {
  server = createServer(async (req, res) => {
    const body = await readJson(req);
    res.setHeader("Content-Type", "application/json");
    if (down) {
      res.statusCode = 503;
      res.end(JSON.stringify({ error: { message: "Neo4j is not reachable", type: "unavailable_error" } }));
      return;
    }
    received.push({ path: req.url ?? "", auth: req.headers.authorization, body });
    if (req.url === "/v1/memory/recall") {
      const recalls = String(body.text).includes("Sarah");
      res.end(JSON.stringify({ memory: [], context: [], nodes: [], text: recalls ? BLOCK : "" }));
    } else if (req.url === "/v1/memory/turns") {
      res.end(JSON.stringify({ conversation_id: `${body.conversation_id}${continuation}`, turns: 1 }));
    } else if (req.url?.startsWith("/v1/conversations/")) {
      res.statusCode = 202;
      res.end(JSON.stringify({ conversation_id: "x", status: "closing" }));
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => server.close());

beforeEach(() => {
  received = [];
  down = false;
  continuation = "";
});

// The hooks' inputs as Opencode builds them, reduced to the fields the plugin reads.
type Input<K extends keyof PegasusHooks> = Parameters<PegasusHooks[K]>;
const said = (hooks: PegasusHooks, session: string, id: string, text: string) =>
  hooks["chat.message"](
    { sessionID: session, messageID: id } as Input<"chat.message">[0],
    { message: { role: "user" }, parts: [{ type: "text", text }] } as unknown as Input<"chat.message">[1],
  );
const system = async (hooks: PegasusHooks, session: string) => {
  const output = { system: ["You are opencode."] };
  await hooks["experimental.chat.system.transform"](
    { sessionID: session } as Input<"experimental.chat.system.transform">[0], output);
  return output.system;
};
const replied = (hooks: PegasusHooks, session: string, part: string, text: string) =>
  hooks["experimental.text.complete"]({ sessionID: session, messageID: "a", partID: part }, { text });
const idle = (hooks: PegasusHooks, session: string) =>
  hooks.event({ event: { type: "session.idle", properties: { sessionID: session } } } as Input<"event">[0]);
const paths = () => received.map((r) => r.path);

test("each turn is recorded as it happens and the memory block joins the system prompt", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-1", warn: () => {} });
  await said(hooks, "s1", "m1", "Should I tell Sarah first?");
  assert.deepEqual(received[0], {
    path: "/v1/memory/turns", auth: "Bearer key-1",
    body: { conversation_id: "opencode-s1", turns: [{ id: "m1", role: "user", content: "Should I tell Sarah first?" }] },
  });
  const first = await system(hooks, "s1");
  const again = await system(hooks, "s1"); // a tool-call step of the same turn: no second recall
  assert.deepEqual(first, ["You are opencode.", `${MEMORY_PREAMBLE}\n\n${BLOCK}`]);
  assert.deepEqual(again, first);
  await replied(hooks, "s1", "p1", "Yes, tell her.");
  assert.deepEqual(paths(), ["/v1/memory/turns", "/v1/memory/recall", "/v1/memory/turns"]);
  assert.deepEqual(received[1].body, { text: "Should I tell Sarah first?", conversation_id: "opencode-s1" });
  assert.deepEqual(received[2].body.turns, [{ id: "p1", role: "assistant", content: "Yes, tell her." }]);
});

test("a message that recalls nothing leaves the system prompt alone", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "k", warn: () => {} });
  await said(hooks, "s2", "m1", "What is the boiling point of water?");
  assert.deepEqual(await system(hooks, "s2"), ["You are opencode."]);
});

test("an idle session is closed under the id the server gave it", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "k", idleCloseMs: 20, warn: () => {} });
  continuation = ".2"; // the server had closed opencode-s3 before: its turns went to .2
  await said(hooks, "s3", "m1", "hello");
  await idle(hooks, "s3");
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(paths(), ["/v1/memory/turns", "/v1/conversations/opencode-s3.2/close"]);
});

test("quitting Opencode closes the sessions that had gone idle, not the others", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "k", warn: () => {} });
  await said(hooks, "done", "m1", "that is all");
  await idle(hooks, "done");
  await said(hooks, "busy", "m2", "still typing");
  await hooks.dispose();
  assert.deepEqual(paths(), ["/v1/memory/turns", "/v1/memory/turns", "/v1/conversations/opencode-done/close"]);
});

test("with the server down the turn goes on, one warning, and nothing is lost across a restart", async () => {
  const spoolPath = join(mkdtempSync(join(tmpdir(), "pegasus-spool-")), "spool.json");
  const warnings: string[] = [];
  down = true;
  const hooks = createPegasusHooks({ baseUrl, apiKey: "k", spoolPath, warn: (m) => warnings.push(m) });
  await said(hooks, "s4", "m1", "Sarah moved to Oslo");
  assert.deepEqual(await system(hooks, "s4"), ["You are opencode."]);
  await replied(hooks, "s4", "p1", "Noted.");
  await idle(hooks, "s4");
  await hooks.dispose(); // Opencode quits while the server is still down
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /503: Neo4j is not reachable.*turn goes on/);
  assert.equal(hooks.pending(), 3);
  assert.ok(existsSync(spoolPath));

  down = false; // the server is back, Opencode starts again
  const restarted = createPegasusHooks({ baseUrl, apiKey: "k", spoolPath, warn: () => {} });
  assert.equal(await restarted.drain(), true);
  assert.deepEqual(paths(), ["/v1/memory/turns", "/v1/memory/turns", "/v1/conversations/opencode-s4/close"]);
  assert.deepEqual(received.map((r) => (r.body.turns as { id: string }[] | undefined)?.[0].id), ["m1", "p1", undefined]);
  assert.deepEqual(JSON.parse(readFileSync(spoolPath, "utf8")).pending, []);
});
