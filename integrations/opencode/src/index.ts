/**
 * Pegasus for Opencode: the plugin module. Opencode calls every function this module exports
 * as a plugin, so it exports the plugin alone (the hooks live in ./hooks.ts).
 *
 * Configure with PEGASUS_URL (default http://127.0.0.1:8080), PEGASUS_API_KEY (else the URL
 * and key `pegasus connect opencode` wrote in $XDG_CONFIG_HOME/pegasus/client.json),
 * PEGASUS_IDLE_CLOSE_MS (default 10 minutes) and PEGASUS_SPOOL (default
 * $XDG_STATE_HOME/opencode-pegasus/spool.json).
 */

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

import type { Plugin } from "@opencode-ai/plugin";

import { createPegasusHooks } from "./hooks.js";

function defaultSpool(): string {
  const state = process.env.XDG_STATE_HOME || join(homedir(), ".local", "state");
  return join(state, "opencode-pegasus", "spool.json");
}

/** `url` and `key` from the client file `pegasus connect` writes; {} without one. */
function clientSettings(): { url?: string; key?: string } {
  const config = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  try {
    const data = JSON.parse(readFileSync(join(config, "pegasus", "client.json"), "utf8"));
    return {
      url: typeof data?.url === "string" ? data.url : undefined,
      key: typeof data?.key === "string" ? data.key : undefined,
    };
  } catch {
    return {};
  }
}

/** The plugin Opencode loads: configured from PEGASUS_URL, PEGASUS_API_KEY, … */
const PegasusPlugin: Plugin = async () => {
  const client = clientSettings();
  const baseUrl = process.env.PEGASUS_URL || client.url || "http://127.0.0.1:8080";
  const apiKey = process.env.PEGASUS_API_KEY || client.key;
  if (!apiKey) {
    console.warn("[pegasus] PEGASUS_API_KEY is not set: memory is off for this session");
    return {};
  }
  const idle = Number(process.env.PEGASUS_IDLE_CLOSE_MS);
  const { drain, pending: _pending, ...hooks } = createPegasusHooks({
    baseUrl,
    apiKey,
    idleCloseMs: Number.isFinite(idle) && idle > 0 ? idle : undefined,
    spoolPath: process.env.PEGASUS_SPOOL || defaultSpool(),
  });
  void drain(); // what an earlier run could not send
  return hooks;
};

export default PegasusPlugin;
