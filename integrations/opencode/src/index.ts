/**
 * Pegasus for Opencode: the user's own long-term memory, recalled passively each turn.
 *
 * - `chat.message`: keeps the user's newest message and adds it to the session's transcript.
 * - `experimental.chat.system.transform`: recalls on that message (POST /v1/memory/recall,
 *   logged on the conversation) and appends the [MEMORY]/[CONTEXT] block to the system prompt.
 *   The model never has to call a tool to remember.
 * - `event`: when a session has been idle for `idleCloseMs` (or is deleted), the finished
 *   conversation goes to POST /v1/memory/remember and is closed (POST /v1/memory/close), which
 *   reinforces what its recalls used. A session that goes on afterwards continues as a new
 *   conversation (`opencode-<session>.2`, …).
 *
 * Configure with PEGASUS_URL (the `pegasus serve` address) and PEGASUS_API_KEY.
 */

export const MEMORY_PREAMBLE =
  "Long-term memory of this user, recalled from earlier conversations " +
  "(relations, then their own words). Use it when it helps; do not recite it.";

export interface PegasusOptions {
  /** Base URL of `pegasus serve`, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** An API key the server maps to this user. */
  apiKey: string;
  /** Close a conversation after this long without a new message (default 10 minutes). */
  idleCloseMs?: number;
  /** Per-request timeout (default 10 s): a slow memory server never stalls a turn for long. */
  timeoutMs?: number;
  /** Where problems are reported (default console.warn). */
  warn?: (message: string) => void;
}

export interface Turn {
  role: "user" | "assistant";
  content: string;
}

interface TextPart {
  type: string;
  text?: string;
}

interface SessionState {
  segment: number;
  turns: Turn[];
  latest?: string;
  recalled?: { text: string; block: string };
  timer?: ReturnType<typeof setTimeout>;
}

/** The hook shapes this plugin implements (a structural subset of @opencode-ai/plugin's Hooks). */
export interface PegasusHooks {
  "chat.message": (
    input: { sessionID: string },
    output: { message: { role?: string }; parts: TextPart[] },
  ) => Promise<void>;
  "experimental.chat.system.transform": (
    input: { sessionID: string },
    output: { system: string[] },
  ) => Promise<void>;
  event: (input: { event: { type: string; properties?: Record<string, unknown> } }) => Promise<void>;
  /** Send every open conversation now (tests, and a host shutting down). */
  flushAll: () => Promise<void>;
}

export function createPegasusHooks(options: PegasusOptions): PegasusHooks {
  const base = options.baseUrl.replace(/\/+$/, "");
  const idleCloseMs = options.idleCloseMs ?? 10 * 60 * 1000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const warn = options.warn ?? ((message: string) => console.warn(`[pegasus] ${message}`));
  const sessions = new Map<string, SessionState>();

  const state = (sessionID: string): SessionState => {
    let found = sessions.get(sessionID);
    if (!found) {
      found = { segment: 1, turns: [] };
      sessions.set(sessionID, found);
    }
    return found;
  };

  const conversationId = (sessionID: string, s: SessionState): string =>
    s.segment === 1 ? `opencode-${sessionID}` : `opencode-${sessionID}.${s.segment}`;

  async function post(path: string, body: unknown): Promise<Record<string, unknown> | undefined> {
    try {
      const response = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${options.apiKey}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const data = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!response.ok) {
        const error = data.error as { message?: string } | undefined;
        warn(`${path} answered ${response.status}: ${error?.message ?? "no detail"}`);
        return undefined;
      }
      return data;
    } catch (err) {
      warn(`${path} failed: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  async function flush(sessionID: string): Promise<void> {
    const s = sessions.get(sessionID);
    if (!s) return;
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    if (s.turns.length === 0) return;
    const conversation_id = conversationId(sessionID, s);
    const turns = s.turns;
    s.turns = [];
    s.segment += 1;
    s.recalled = undefined;
    await post("/v1/memory/remember", { conversation_id, turns });
    await post("/v1/memory/close", { conversation_id });
  }

  return {
    "chat.message": async (input, output) => {
      if (output.message.role && output.message.role !== "user") return;
      const text = output.parts
        .filter((p) => p.type === "text" && typeof p.text === "string")
        .map((p) => p.text)
        .join("\n")
        .trim();
      if (!text) return;
      const s = state(input.sessionID);
      if (s.timer) clearTimeout(s.timer);
      s.timer = undefined;
      s.latest = text;
      s.turns.push({ role: "user", content: text });
    },

    "experimental.chat.system.transform": async (input, output) => {
      const s = sessions.get(input.sessionID);
      if (!s?.latest) return;
      // Opencode rebuilds the system prompt for every step of a turn (tool calls included):
      // recall once per user message.
      if (s.recalled?.text !== s.latest) {
        const result = await post("/v1/memory/recall", {
          text: s.latest,
          conversation_id: conversationId(input.sessionID, s),
        });
        s.recalled = { text: s.latest, block: typeof result?.text === "string" ? result.text : "" };
      }
      if (s.recalled.block) output.system.push(`${MEMORY_PREAMBLE}\n\n${s.recalled.block}`);
    },

    event: async ({ event }) => {
      const sessionID = (event.properties?.sessionID ??
        (event.properties?.info as { id?: string } | undefined)?.id) as string | undefined;
      if (!sessionID) return;
      if (event.type === "session.idle") {
        const s = sessions.get(sessionID);
        if (!s || s.turns.length === 0) return;
        if (s.timer) clearTimeout(s.timer);
        s.timer = setTimeout(() => void flush(sessionID), idleCloseMs);
        s.timer.unref?.();
      } else if (event.type === "session.deleted") {
        await flush(sessionID);
        sessions.delete(sessionID);
      }
    },

    flushAll: async () => {
      await Promise.all([...sessions.keys()].map((id) => flush(id)));
    },
  };
}

/** The plugin Opencode loads: configured from PEGASUS_URL and PEGASUS_API_KEY. */
export const PegasusPlugin = async (): Promise<Omit<PegasusHooks, "flushAll">> => {
  const baseUrl = process.env.PEGASUS_URL ?? "http://127.0.0.1:8080";
  const apiKey = process.env.PEGASUS_API_KEY;
  if (!apiKey) {
    console.warn("[pegasus] PEGASUS_API_KEY is not set: memory is off for this session");
    return {
      "chat.message": async () => {},
      "experimental.chat.system.transform": async () => {},
      event: async () => {},
    };
  }
  const idle = Number(process.env.PEGASUS_IDLE_CLOSE_MS);
  const { flushAll: _flush, ...hooks } = createPegasusHooks({
    baseUrl,
    apiKey,
    idleCloseMs: Number.isFinite(idle) && idle > 0 ? idle : undefined,
  });
  return hooks;
};

export default PegasusPlugin;
