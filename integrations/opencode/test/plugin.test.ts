import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";

import { createPegasusHooks, MEMORY_PREAMBLE } from "../src/index.js";

interface Received {
  path: string;
  auth: string | undefined;
  body: Record<string, unknown>;
}

const BLOCK = "[MEMORY]\nBill -[HAS_BOSS]-> Sarah\n\n[CONTEXT]\n- \"my boss Sarah moved the deadline\"";
let server: Server;
let baseUrl: string;
let received: Received[] = [];
let failRecall = false;

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let raw = "";
  for await (const chunk of req) raw += chunk;
  return raw ? JSON.parse(raw) : {};
}

before(async () => {
  server = createServer(async (req, res) => {
    const body = await readJson(req);
    received.push({ path: req.url ?? "", auth: req.headers.authorization, body });
    res.setHeader("Content-Type", "application/json");
    if (req.url === "/v1/memory/recall") {
      if (failRecall) {
        res.statusCode = 503;
        res.end(JSON.stringify({ error: { message: "Neo4j is not reachable", type: "unavailable_error" } }));
        return;
      }
      const recalls = String(body.text).includes("Sarah");
      res.end(JSON.stringify({ memory: [], context: [], nodes: [], text: recalls ? BLOCK : "" }));
    } else if (req.url === "/v1/memory/remember") {
      res.end(JSON.stringify({ user_id: "u", conversation_id: body.conversation_id }));
    } else if (req.url === "/v1/memory/close") {
      res.end(JSON.stringify({ conversation_id: body.conversation_id, reinforced: 1 }));
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
  failRecall = false;
});

const userMessage = (text: string) => ({ message: { role: "user" }, parts: [{ type: "text", text }] });

test("a message that recalls gets the memory block appended to the system prompt", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-test-0001" });
  await hooks["chat.message"]({ sessionID: "s1" }, userMessage("Should I tell Sarah?"));
  const output = { system: ["You are opencode."] };
  await hooks["experimental.chat.system.transform"]({ sessionID: "s1" }, output);
  assert.deepEqual(output.system, ["You are opencode.", `${MEMORY_PREAMBLE}\n\n${BLOCK}`]);
  assert.deepEqual(received, [{
    path: "/v1/memory/recall",
    auth: "Bearer key-test-0001",
    body: { text: "Should I tell Sarah?", conversation_id: "opencode-s1" },
  }]);
});

test("nothing recalled leaves the system prompt alone, and each message is recalled once", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-test-0001" });
  await hooks["chat.message"]({ sessionID: "s2" }, userMessage("What is 2 + 2?"));
  for (let step = 0; step < 3; step++) {
    const output = { system: ["You are opencode."] };
    await hooks["experimental.chat.system.transform"]({ sessionID: "s2" }, output);
    assert.deepEqual(output.system, ["You are opencode."]);
  }
  assert.equal(received.filter((r) => r.path === "/v1/memory/recall").length, 1);
});

test("a memory server that fails never breaks the turn", async () => {
  const warnings: string[] = [];
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-test-0001", warn: (m) => warnings.push(m) });
  failRecall = true;
  await hooks["chat.message"]({ sessionID: "s3" }, userMessage("Sarah again"));
  const output = { system: ["You are opencode."] };
  await hooks["experimental.chat.system.transform"]({ sessionID: "s3" }, output);
  assert.deepEqual(output.system, ["You are opencode."]);
  assert.match(warnings[0], /recall answered 503: Neo4j is not reachable/);
  const unreachable = createPegasusHooks({ baseUrl: "http://127.0.0.1:9", apiKey: "k", warn: (m) => warnings.push(m) });
  await unreachable["chat.message"]({ sessionID: "s3" }, userMessage("Sarah again"));
  await unreachable["experimental.chat.system.transform"]({ sessionID: "s3" }, output);
  assert.deepEqual(output.system, ["You are opencode."]);
  assert.match(warnings[1], /recall failed/);
});

test("an idle session sends the finished conversation to remember, then closes it", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-test-0001", idleCloseMs: 50 });
  await hooks["chat.message"]({ sessionID: "s4" }, userMessage("My boss Sarah moved the deadline"));
  await hooks["chat.message"]({ sessionID: "s4" }, { message: { role: "assistant" }, parts: [{ type: "text", text: "ignored" }] });
  await hooks["chat.message"]({ sessionID: "s4" }, userMessage("and I am exhausted"));
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "s4" } } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(received.map((r) => [r.path, r.body.conversation_id]), [
    ["/v1/memory/remember", "opencode-s4"],
    ["/v1/memory/close", "opencode-s4"],
  ]);
  assert.deepEqual(received[0].body.turns, [
    { role: "user", content: "My boss Sarah moved the deadline" },
    { role: "user", content: "and I am exhausted" },
  ]);
  // The session goes on: a new conversation, not a reopened one.
  received = [];
  await hooks["chat.message"]({ sessionID: "s4" }, userMessage("One more thing about Sarah"));
  await hooks["experimental.chat.system.transform"]({ sessionID: "s4" }, { system: [] });
  assert.equal(received[0].body.conversation_id, "opencode-s4.2");
});

test("a new message cancels the idle close; deleting the session sends at once", async () => {
  const hooks = createPegasusHooks({ baseUrl, apiKey: "key-test-0001", idleCloseMs: 150 });
  await hooks["chat.message"]({ sessionID: "s5" }, userMessage("first"));
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "s5" } } });
  await hooks["chat.message"]({ sessionID: "s5" }, userMessage("second"));
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(received.length, 0);
  await hooks.event({ event: { type: "session.deleted", properties: { info: { id: "s5" } } } });
  assert.deepEqual(received.map((r) => r.path), ["/v1/memory/remember", "/v1/memory/close"]);
  assert.deepEqual((received[0].body.turns as unknown[]).length, 2);
});
