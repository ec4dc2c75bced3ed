/**
 * Pegasus for Opencode: the user's own long-term memory, recalled passively each turn.
 *
 * - `chat.message`: the user's message is recorded on `pegasus serve` at once
 *   (POST /v1/memory/turns, with the message id, so a resend is recorded once).
 * - `experimental.chat.system.transform`: recalls on that message (POST /v1/memory/recall,
 *   logged on the conversation) and appends the [MEMORY]/[CONTEXT] block to the system prompt.
 *   The model never has to call a tool to remember.
 * - `experimental.text.complete`: each finished text part of the reply is recorded too.
 * - `event`: a session idle for `idleCloseMs`, or deleted, is closed
 *   (POST /v1/conversations/{id}/close: accepted at once; the server extracts it in the
 *   background and retries when that fails). `dispose` (Opencode quitting) closes the sessions
 *   that were idle. A session that goes on after a close continues as `<id>.2`, … (the server
 *   says which).
 *
 * Nothing is lost when `pegasus serve` is down: what could not be sent waits in a spool file
 * (`spoolPath`) and is sent, in order, once the server answers again; one warning per outage.
 * The plugin module Opencode loads is ./index.ts; this one holds the hooks, for tests too.
 */

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

import type { Hooks } from "@opencode-ai/plugin";

export const MEMORY_PREAMBLE =
  "Long-term memory of this user, recalled from earlier conversations " +
  "(relations, then their own words). Use it when it helps; do not recite it.";

export interface PegasusOptions {
  /** Base URL of `pegasus serve`, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** An API key the server maps to this user. */
  apiKey: string;
  /** Close a conversation after this long idle (default 10 minutes). */
  idleCloseMs?: number;
  /** Per-request timeout (default 10 s): a slow memory server never stalls a turn for long. */
  timeoutMs?: number;
  /** Where unsent turns and closes wait for the server (none: kept in memory only). */
  spoolPath?: string;
  /** Where problems are reported (default console.warn). */
  warn?: (message: string) => void;
}

export interface Turn {
  id: string;
  role: "user" | "assistant";
  content: string;
}

/** What waits to be sent: a turn of a session, or the close of a session. */
type Pending = { session: string; turn: Turn } | { session: string; close: true };

interface SessionState {
  latest?: string;
  recalled?: { text: string; block: string };
  timer?: ReturnType<typeof setTimeout>;
  idle?: boolean;
}

interface Spool {
  pending: Pending[];
  /** The server's conversation id for each session (a continuation after a close). */
  conversations: Record<string, string>;
}

export type PegasusHooks = Required<
  Pick<Hooks, "chat.message" | "experimental.chat.system.transform" | "experimental.text.complete" | "event" | "dispose">
> & {
  /** Send what waits now; true when nothing is left (tests, and a host shutting down). */
  drain: () => Promise<boolean>;
  /** How many turns and closes wait for the server. */
  pending: () => number;
};

const baseId = (sessionID: string) => `opencode-${sessionID}`;

function loadSpool(path: string | undefined): Spool {
  if (path) {
    try {
      const data = JSON.parse(readFileSync(path, "utf8")) as Partial<Spool>;
      return { pending: data.pending ?? [], conversations: data.conversations ?? {} };
    } catch {
      /* no spool yet, or unreadable: start empty */
    }
  }
  return { pending: [], conversations: {} };
}

export function createPegasusHooks(options: PegasusOptions): PegasusHooks {
  const base = options.baseUrl.replace(/\/+$/, "");
  const idleCloseMs = options.idleCloseMs ?? 10 * 60 * 1000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const warn = options.warn ?? ((message: string) => console.warn(`[pegasus] ${message}`));
  const sessions = new Map<string, SessionState>();
  const spool = loadSpool(options.spoolPath);
  let down = false;
  let draining: Promise<boolean> | undefined;

  const state = (sessionID: string): SessionState => {
    let found = sessions.get(sessionID);
    if (!found) {
      found = {};
      sessions.set(sessionID, found);
    }
    return found;
  };
  const conversationOf = (sessionID: string) => spool.conversations[sessionID] ?? baseId(sessionID);

  function save(): void {
    if (!options.spoolPath) return;
    try {
      mkdirSync(dirname(options.spoolPath), { recursive: true });
      const temporary = `${options.spoolPath}.tmp`;
      writeFileSync(temporary, JSON.stringify(spool));
      renameSync(temporary, options.spoolPath);
    } catch (err) {
      warn(`cannot write the spool ${options.spoolPath}: ${String(err)}`);
    }
  }

  /** One request; the answer's JSON, or undefined (and one warning per outage). */
  async function post(path: string, body: unknown): Promise<Record<string, unknown> | undefined> {
    let problem: string;
    try {
      const response = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${options.apiKey}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const data = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (response.ok) {
        if (down) warn("pegasus serve answers again: sending what waited");
        down = false;
        return data;
      }
      const error = data.error as { message?: string } | undefined;
      problem = `${path} answered ${response.status}: ${error?.message ?? "no detail"}`;
    } catch (err) {
      problem = `${path} failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (!down) warn(`${problem} (memory is kept and sent later; the turn goes on)`);
    down = true;
    return undefined;
  }

  async function send(item: Pending): Promise<boolean> {
    if ("turn" in item) {
      const answer = await post("/v1/memory/turns", {
        conversation_id: baseId(item.session),
        turns: [item.turn],
      });
      if (typeof answer?.conversation_id === "string") {
        spool.conversations[item.session] = answer.conversation_id;
      }
      return answer !== undefined;
    }
    const id = conversationOf(item.session);
    const answer = await post(`/v1/conversations/${encodeURIComponent(id)}/close`, {});
    if (answer !== undefined) delete spool.conversations[item.session];
    return answer !== undefined;
  }

  /** Send what waits, in order, stopping at the first failure (it stays for next time). */
  async function sendAll(): Promise<boolean> {
    while (spool.pending.length > 0) {
      if (!(await send(spool.pending[0]))) return false;
      spool.pending.shift();
      save();
    }
    return true;
  }

  /** One sender at a time: a call while it runs waits for the same round. */
  function drain(): Promise<boolean> {
    if (!draining) {
      draining = sendAll().finally(() => {
        draining = undefined;
      });
    }
    return draining;
  }

  async function enqueue(item: Pending): Promise<boolean> {
    spool.pending.push(item);
    save();
    const sent = await drain();
    // pushed while a round was ending: one more round picks it up
    return spool.pending.includes(item) && sent ? drain() : sent;
  }

  async function close(sessionID: string): Promise<void> {
    const s = sessions.get(sessionID);
    if (s?.timer) clearTimeout(s.timer);
    if (s) {
      s.timer = undefined;
      s.idle = false;
      s.recalled = undefined;
    }
    await enqueue({ session: sessionID, close: true });
  }

  return {
    "chat.message": async (input, output) => {
      if (output.message.role && output.message.role !== "user") return;
      const text = output.parts
        .map((p) => (p.type === "text" && !p.synthetic ? p.text : ""))
        .join("\n")
        .trim();
      if (!text) return;
      const s = state(input.sessionID);
      if (s.timer) clearTimeout(s.timer);
      s.timer = undefined;
      s.idle = false;
      s.latest = text;
      const id = input.messageID ?? output.message.id ?? `${Date.now()}-${Math.random()}`;
      await enqueue({ session: input.sessionID, turn: { id, role: "user", content: text } });
    },

    "experimental.chat.system.transform": async (input, output) => {
      const s = input.sessionID ? sessions.get(input.sessionID) : undefined;
      if (!input.sessionID || !s?.latest) return;
      // Opencode rebuilds the system prompt for every step of a turn (tool calls included):
      // recall once per user message.
      if (s.recalled?.text !== s.latest) {
        const result = await post("/v1/memory/recall", {
          text: s.latest,
          conversation_id: conversationOf(input.sessionID),
        });
        s.recalled = { text: s.latest, block: typeof result?.text === "string" ? result.text : "" };
      }
      if (s.recalled.block) output.system.push(`${MEMORY_PREAMBLE}\n\n${s.recalled.block}`);
    },

    "experimental.text.complete": async (input, output) => {
      if (!output.text.trim() || !sessions.get(input.sessionID)?.latest) return;
      await enqueue({
        session: input.sessionID,
        turn: { id: input.partID, role: "assistant", content: output.text },
      });
    },

    event: async ({ event }) => {
      if (event.type === "session.idle") {
        const sessionID = event.properties.sessionID;
        const s = sessions.get(sessionID);
        if (!s?.latest) return;
        if (s.timer) clearTimeout(s.timer);
        s.idle = true;
        s.timer = setTimeout(() => void close(sessionID), idleCloseMs);
        s.timer.unref?.();
        void drain();
      } else if (event.type === "session.deleted") {
        const sessionID = event.properties.info.id;
        if (sessions.get(sessionID)?.latest) await close(sessionID);
        sessions.delete(sessionID);
      }
    },

    dispose: async () => {
      // Opencode is quitting: a session that had gone idle is over; the others are closed by
      // the server's own idle sweep. What cannot be sent stays in the spool for next time.
      for (const [sessionID, s] of sessions) {
        if (s.timer) clearTimeout(s.timer);
        if (s.idle) {
          spool.pending.push({ session: sessionID, close: true });
        }
      }
      sessions.clear();
      save();
      await drain();
    },

    drain,
    pending: () => spool.pending.length,
  };
}

