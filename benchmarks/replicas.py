"""Replicas of `pegasus serve` on one Neo4j, one of them killed mid-run: nothing is lost.

    python -m benchmarks.replicas [--users 50 --conversations 3 --turns 2 --replicas 3]

N `pegasus serve` processes share one database (NEO4J_URI, else a throwaway server), each
with its own PEGASUS_HOME, as separate machines would have, and a scripted extraction model
that logs every call with the conversation it extracts. Clients, as a load balancer would
spread them, send each user's proxied conversations (chat turns to a stub upstream) to the
replicas in turn, then close each conversation. Halfway through the closes, replica 0 gets
SIGKILL;
a request it cannot answer is sent to the next replica. Afterwards:
- lost turns: accepted user turns (200) missing from their conversation's transcript;
- every accepted close (202) ends `closed`, its extraction completed exactly once (a
  completed extraction is the model's `finish` call; one cut off by the kill is redone);
- the decay passes the replicas ran (counted in the graph): one per day, whoever runs it.
Results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from pegasus import Memory, Settings
from pegasus.operations.neo4j_local import free_port
from pegasus.settings import secret_text
from tests.serve.servers import StubUpstream, serving

ROOT = Path(__file__).resolve().parents[1]
SAID = "my sister Maya is training for the Oslo marathon in June"
TOKEN = re.compile(r"\[(u\d+-c\d+)\] turn (\d+):")


class ScriptedExtractor(BaseChatModel):
    """Extracts User -[HAS_SISTER]-> Maya from any transcript, then finishes; logs each call
    (`extract` or `finish`, the conversation, the process) to `log_path`."""

    log_path: str

    @property
    def _llm_type(self) -> str:
        return "replica-script"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        human = str(next(m.content for m in messages if isinstance(m, HumanMessage)))
        # The turns this call extracts: the TRANSCRIPT's, not the earlier ones shown as context
        # when the conversation was consolidated in-session before (design §9).
        new = human.split("TRANSCRIPT\n", 1)[-1].split("\n\nKNOWN MEMORY", 1)[0]
        found = sorted({f"{c}#{t}" for c, t in TOKEN.findall(new)})
        first = not any(isinstance(m, AIMessage) for m in messages)
        if first:
            calls = [{"name": "record_entity", "id": "c1", "type": "tool_call",
                      "args": {"name": "Maya", "kind": "PERSON", "confidence": 0.9}},
                     {"name": "record_relation", "id": "c2", "type": "tool_call",
                      "args": {"source": "User", "relation": "HAS_SISTER", "target": "Maya",
                               "confidence": 0.9, "stability": "stable",
                               "cardinality": "one_to_many", "snippet": SAID}}]
        else:
            calls = [{"name": "finish", "id": "c3", "type": "tool_call", "args": {}}]
        with open(self.log_path, "a", encoding="utf-8") as log:
            for turn in found or ["?"]:
                log.write(f"{'extract' if first else 'finish'} {turn} {os.getpid()}\n")
        return ChatResult(generations=[ChatGeneration(
            message=AIMessage(content="", tool_calls=calls))])


def extractor(settings) -> ScriptedExtractor:
    """PEGASUS_LLM_FACTORY=benchmarks.replicas:extractor (the log file from the environment)."""
    return ScriptedExtractor(log_path=os.environ["PEGASUS_BENCH_EXTRACTIONS"])


class Replicas:
    """The serve processes; `urls[i]` is None once replica i is dead."""

    def __init__(self, count: int, env: dict[str, str], folder: Path) -> None:
        self.processes: list[subprocess.Popen] = []
        self.urls: list[str | None] = []
        self.logs = [folder / f"replica-{i}.log" for i in range(count)]
        for i in range(count):
            port = free_port()
            home = folder / f"home-{i}"
            home.mkdir(parents=True, exist_ok=True)
            with open(self.logs[i], "w") as log:
                self.processes.append(subprocess.Popen(
                    [sys.executable, "-m", "pegasus", "serve", "--port", str(port)],
                    env={**env, "PEGASUS_HOME": str(home)}, stdout=log,
                    stderr=subprocess.STDOUT, cwd=ROOT))
            self.urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 240
        for i, url in enumerate(self.urls):
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if self.processes[i].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"replica {i} did not start: "
                                       f"{self.logs[i].read_text()[-2000:]}")
                time.sleep(0.3)

    def kill(self, i: int) -> None:
        self.processes[i].send_signal(signal.SIGKILL)
        self.processes[i].wait(timeout=30)
        self.urls[i] = None

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            process.wait(timeout=60)


async def clients(replicas: Replicas, keys: dict[str, str], conversations: int, turns: int,
                  concurrency: int, kill_after: int) -> dict[str, Any]:
    """Every user's conversations, turn by turn then closed; replica 0 killed after
    `kill_after` requests. What was accepted, and what was refused."""
    accepted: dict[str, list[str]] = collections.defaultdict(list)  # conversation → user turns
    closes: dict[str, str] = {}  # conversation → its user
    accepted_by_killed: list[str] = []  # closes replica 0 accepted (202) before it died
    errors: collections.Counter = collections.Counter()
    gate = asyncio.Semaphore(concurrency)
    done = 0
    killed_at: list[float] = []

    async def send(http: httpx.AsyncClient, start: int, method: str, path: str,
                   **kwargs) -> tuple[httpx.Response | None, int | None]:
        """To replica `start`, else the next live one (a balancer's retry)."""
        nonlocal done
        count = len(replicas.urls)
        for step in range(count):
            url = replicas.urls[(start + step) % count]
            if url is None:
                continue
            try:
                async with gate:
                    answer = await http.request(method, url + path, **kwargs)
            except httpx.TransportError:
                errors["a replica did not answer (retried on the next)"] += 1
                continue
            done += 1
            if done == kill_after and replicas.urls[0] is not None:
                replicas.kill(0)
                killed_at.append(time.monotonic())
            return answer, (start + step) % count
        return None, None

    async def conversation(http: httpx.AsyncClient, n: int, key: str, user: str,
                           c: int) -> None:
        conversation_id = f"u{n}-c{c}"
        headers = {"Authorization": f"Bearer {key}", "X-Pegasus-Conversation": conversation_id}
        history: list[dict[str, str]] = []
        for t in range(turns):
            text = f"[{conversation_id}] turn {t}: {SAID}, and this is turn {t}."
            history.append({"role": "user", "content": text})
            answer, _ = await send(http, n + c + t, "POST", "/v1/chat/completions",
                                headers=headers, timeout=60,
                                json={"model": "stub-model", "messages": history})
            if answer is not None and answer.status_code == 200:
                accepted[conversation_id].append(text)
                history.append({"role": "assistant",
                                "content": answer.json()["choices"][0]["message"]["content"]})
            else:
                errors[f"turn answered {getattr(answer, 'status_code', 'nothing')}"] += 1
        answer, replica = await send(http, n + c + turns, "POST",
                            f"/v1/conversations/{conversation_id}/close",
                            headers=headers, timeout=60)
        if answer is not None and answer.status_code == 202:
            closes[conversation_id] = user
            if replica == 0:
                accepted_by_killed.append(conversation_id)
        else:
            errors[f"close answered {getattr(answer, 'status_code', 'nothing')}"] += 1

    began = time.monotonic()
    async with httpx.AsyncClient() as http:
        await asyncio.gather(*(conversation(http, n, key, user, c)
                               for n, (key, user) in enumerate(keys.items())
                               for c in range(conversations)))
    return {"accepted": accepted, "closes": closes, "errors": errors,
            "accepted_by_killed": accepted_by_killed,
            "seconds": time.monotonic() - began,
            "killed_after_s": (killed_at[0] - began) if killed_at else None}


def run(env: dict[str, str], folder: Path, users: int = 50, conversations: int = 3,
        turns: int = 2, replicas: int = 3, concurrency: int = 8,
        wait_s: float = 300.0) -> dict[str, Any]:
    """The whole run against the database `env` names; the figures."""
    folder.mkdir(parents=True, exist_ok=True)
    extractions = folder / "extractions.log"
    extractions.write_text("")
    tag = f"{os.getpid()}-{int(time.time())}"
    keys = {f"key-replica-{tag}-{i:03d}": f"replica-user-{tag}-{i}" for i in range(users)}
    upstream = StubUpstream()
    upstream.CHUNK_DELAY_S = 0.0
    with serving(upstream.app) as stub:
        serve_env = {**env, "PEGASUS_API_KEYS": json.dumps(keys),
                     "PEGASUS_UPSTREAM_BASE_URL": f"{stub}/v1",
                     "PEGASUS_LLM_FACTORY": "benchmarks.replicas:extractor",
                     "PEGASUS_BENCH_EXTRACTIONS": str(extractions),
                     "PEGASUS_IDLE_CLOSE_S": "3600", "PEGASUS_IDLE_SWEEP_S": "1",
                     "PEGASUS_CLOSE_LEASE_S": "5", "PEGASUS_CLOSE_RETRY_S": "1",
                     "PEGASUS_DECAY_IN_SERVE": "true", "HF_HUB_OFFLINE": "1",
                     "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        with Memory(_settings(env)) as mem:
            decay_runs = mem.store.read("read/decay_runs")[0]["runs"]
        group = Replicas(replicas, serve_env, folder)
        try:
            # Clients send every first turn, then every second …, then the closes: the kill
            # comes halfway through the closes, when the victim holds accepted closes.
            chats = users * conversations * turns
            result = asyncio.run(clients(group, keys, conversations, turns, concurrency,
                                         kill_after=chats + users * conversations // 2))
            with Memory(_settings(env)) as mem:
                deadline = time.monotonic() + wait_s
                pending = dict(result["closes"])
                while pending and time.monotonic() < deadline:
                    for conversation_id, user in list(pending.items()):
                        if mem.conversation_state(user, conversation_id)["status"] == "closed":
                            del pending[conversation_id]
                    time.sleep(0.5)
                lost = 0
                owner = dict(zip([f"u{n}" for n in range(users)], keys.values(), strict=True))
                for conversation_id, texts in result["accepted"].items():
                    user = owner[conversation_id.split("-")[0]]
                    recorded = {json.loads(t)["content"] for t in
                                mem.conversation_state(user, conversation_id)["turns"]}
                    lost += sum(text not in recorded for text in texts)
                decay_runs = mem.store.read("read/decay_runs")[0]["runs"] - decay_runs
        finally:
            group.stop()
    calls = [tuple(line.split()) for line in extractions.read_text().splitlines()]
    return {
        "users": users, "conversations": len(result["accepted"]), "replicas": replicas,
        "turns_accepted": sum(len(t) for t in result["accepted"].values()),
        "turns_lost": lost, "closes_accepted": len(result["closes"]),
        "closes_unfinished": len(pending),
        # Counted per turn: a conversation consolidated in-session (its user opened another
        # one) and then closed is two extractions of different turns, never of the same one.
        **extraction_counts(calls, str(group.processes[0].pid),
                            turn_keys(result["accepted"], result["closes"]),
                            turn_keys(result["accepted"], result["accepted_by_killed"])),
        "decay_passes": decay_runs,
        "errors": dict(result["errors"]), "seconds": result["seconds"],
        "killed_after_s": result["killed_after_s"],
    }


def turn_keys(accepted: dict[str, list[str]], conversations: Any) -> list[str]:
    """`conversation#turn` for each accepted user turn of these conversations."""
    return [f"{c}#{t}" for c in conversations for text in accepted.get(c, [])
            for _, t in TOKEN.findall(text)]


def extraction_counts(calls: list[tuple[str, str, str]], dead_pid: str, closes: list[str],
                      accepted_by_killed: list[str]) -> dict[str, int]:
    """What the extraction log says ((`extract` | `finish`, item, pid) per model call and item
    it extracts; run() counts per turn, `conversation#turn`, since a conversation consolidated
    in-session is extracted in parts, design §9). `closes`: the items that must end extracted;
    `accepted_by_killed`: those of the closes the killed replica accepted.

    The model's `finish` comes before the commit, and the commit before the close is marked
    `closed`. A close that the killed replica finished and another replica finished again was
    killed after the model's call and before `closed`: either its commit never landed, or it
    did and the other replica's identical batch changed nothing (the same batch committed
    twice is a no-op, design §6). It counts as cut off by the kill, not as a second
    extraction; a close marked `closed` is never taken again."""
    started = collections.Counter(c for kind, c, _ in calls if kind == "extract")
    by_others = collections.Counter(c for kind, c, p in calls
                                    if kind == "finish" and p != dead_pid)
    by_dead = collections.Counter(c for kind, c, p in calls if kind == "finish" and p == dead_pid)
    redone = {c for c in by_dead if c in by_others}
    finished = by_others + collections.Counter({c: n for c, n in by_dead.items()
                                                if c not in redone})
    left = [c for c in accepted_by_killed if c not in by_dead or c in redone]
    return {
        "extractions_completed": sum(finished.values()),
        "double_extractions": sum(1 for n in finished.values() if n > 1),
        "missing_extractions": sum(1 for c in closes if finished[c] == 0),
        "extractions_cut_off": sum(started.values()) - sum(finished.values()),
        "finished_by_the_killed_replica_before_its_commit": len(redone),
        "accepted_by_the_killed_replica": len(accepted_by_killed),
        "of_those_left_unfinished_when_it_died": len(left),
        "finished_by_the_others": sum(1 for c in left if by_others[c]),
    }


def _settings(env: dict[str, str]) -> Settings:
    return Settings(neo4j_uri=env["NEO4J_URI"], neo4j_password=env.get("NEO4J_PASSWORD"),
                    neo4j_user=env.get("NEO4J_USER", "neo4j"),
                    neo4j_database=env.get("NEO4J_DATABASE", "neo4j"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with memory() as mem, tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "NEO4J_URI": mem.settings.neo4j_uri}
        if mem.settings.neo4j_password:
            env["NEO4J_PASSWORD"] = secret_text(mem.settings.neo4j_password)
        figures = run(env, Path(folder), args.users, args.conversations, args.turns,
                      args.replicas)
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {name.replace('_', ' ')} | "
              f"{round(value, 1) if isinstance(value, float) else value} |"
              for name, value in figures.items()]
    lines += ["", f"{args.replicas} `pegasus serve` processes on one Neo4j (same machine), "
              f"{args.users} users × {args.conversations} proxied conversations × "
              f"{args.turns} turns, then a close each; replica 0 killed with SIGKILL halfway "
              "through the closes. Close leases of 5 s (PEGASUS_CLOSE_LEASE_S), sweeps "
              "every second."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Replicas and a crash", "python -m benchmarks.replicas", machine(), lines)


if __name__ == "__main__":
    main()
