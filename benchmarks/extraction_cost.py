"""What extraction costs per close, measured (design §8, "What it costs"):

    python -m benchmarks.extraction_cost

The demo's sample conversations are recorded as the proxy records them and closed by the
close worker (`Conversations.close`, the path of every proxied or hooked conversation), with a
scripted langchain-core chat model as the LLM. The model answers each call with the sample's
own extraction batch as tool calls, and reports `usage_metadata` per call: tokens counted by a
real tokenizer over the request as it would be sent (the messages and the five tool schemas in
the OpenAI shape) and over its answer. langchain-core's UsageMetadataCallbackHandler sums them
per close; the model counts its calls. Two ways a model may answer are measured: `finish` in
the same answer as the records, and `finish` in a second answer. Then the same conversations
recorded turn by turn and consolidated during the session (design §9, "Consolidated during
the session"): a pause after the last turn (the sweep extracts everything, the close nothing),
and a pause after the second turn (two extractions: the first part, then the rest at the close),
beside close-only on the same conversations, with the ratio. Writes the "Extraction cost"
section of docs/benchmarks.md.

The tokenizer is the embedding model's (BERT word pieces, shipped with the package), the one
available offline here: tiktoken fetches its encodings from the network. Word pieces split
JSON punctuation more finely than a GPT or Claude tokenizer, so the counts are on the high
side for the tool schemas and calls; characters are shown beside them.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai.chat_models.base import _convert_message_to_dict
from pydantic import PrivateAttr
from tokenizers import Tokenizer

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from pegasus.clock import parse_instant
from pegasus.demo import samples
from pegasus.embedding.embed import model_path
from pegasus.serve.conversations import Conversations

SHAPES = {"together": "`finish` with the records", "apart": "`finish` in a second answer"}


def tool_calls(batch: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A sample's extraction batch as the recording tools' calls, in the order a model makes
    them (entities, relations, the conversation, forget requests)."""
    calls = [("record_entity", e) for e in batch.get("entities", [])]
    calls += [("record_relation", r) for r in batch.get("relations", [])]
    if batch.get("conversation"):
        calls.append(("record_conversation", batch["conversation"]))
    calls += [("record_forget", f) for f in batch.get("forget", [])]
    return calls


class MeteredModel(BaseChatModel):
    """A scripted chat model that reports each call's tokens in usage_metadata: the request
    as sent (OpenAI-shaped messages and tool schemas) and the answer, counted by a tokenizer.
    Extraction calls (tools bound) are answered from the sample whose opening words the
    transcript holds; a merge review (no tools) is answered with no candidate confirmed."""

    scripts: dict[str, list[tuple[str, dict[str, Any]]]]  # opening user words → tool calls
    shape: str = "apart"
    model_name: str = "scripted"
    tokenizer_file: str
    calls: int = 0
    input_chars: int = 0
    _tokenizer: Tokenizer = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._tokenizer = Tokenizer.from_file(self.tokenizer_file)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    @property
    def _llm_type(self) -> str:
        return "metered-scripted"

    def bind_tools(self, tools: list[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def _answer(self, messages: list[BaseMessage], tools: list[dict] | None) -> AIMessage:
        if not tools:
            return AIMessage('{"candidates": []}')
        human = str(messages[1].content)
        script = next(calls for opening, calls in self.scripts.items() if opening in human)
        if "EARLIER IN THIS CONVERSATION" in human:  # a later part: what its turns say only
            script = said_in(script, human.split("TRANSCRIPT\n", 1)[1].split(
                "\n\nKNOWN MEMORY", 1)[0])
        rounds = ([[*script, ("finish", {})]] if self.shape == "together"
                  else [script, [("finish", {})]])
        answered = sum(isinstance(m, AIMessage) for m in messages)
        named = rounds[min(answered, len(rounds) - 1)]
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{i}",
                                          "type": "tool_call"}
                                         for i, (name, args) in enumerate(named)])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, tools: list[dict] | None = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        request = json.dumps({"messages": [_convert_message_to_dict(m) for m in messages],
                              **({"tools": tools} if tools else {})}, ensure_ascii=False)
        self.input_chars += len(request)
        answer = self._answer(messages, tools)
        sent = json.dumps(_convert_message_to_dict(answer), ensure_ascii=False)
        into, out = self.tokens(request), self.tokens(sent)
        answer.usage_metadata = UsageMetadata(input_tokens=into, output_tokens=out,
                                              total_tokens=into + out)
        answer.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=answer)])


def said_in(script: list[tuple[str, dict[str, Any]]], transcript: str
            ) -> list[tuple[str, dict[str, Any]]]:
    """The calls of `script` that a part of a conversation supports: the relations whose words
    it holds and the entities they name (a model reading only that part records only that)."""
    relations = [(n, a) for n, a in script if n == "record_relation" and a["snippet"] in transcript]
    named = {a[end] for _, a in relations for end in ("source", "target")}
    return [(n, a) for n, a in script
            if (n == "record_entity" and a["name"] in named) or (n, a) in relations]


def split_session(mem: Any, model: MeteredModel, user_id: str, pause_after: int | None,
                  quiet_s: float = 90.0) -> list[dict[str, Any]]:
    """Record each sample turn by turn and consolidate during the session as serve does: the
    first `pause_after` turns, `quiet_s` seconds of quiet seen by the server's sweep (which
    extracts what waits, under the small-part rule), the rest, then the close (what is left);
    None: close only. Per conversation: calls, tokens, characters, memories."""
    conversations = Conversations(mem)
    rows = []
    try:
        for conv in samples():
            at = parse_instant(conv["at"])
            usage = UsageMetadataCallbackHandler()
            model.callbacks = [usage]
            calls, chars = model.calls, model.input_chars
            turns = conv["transcript"]
            cut = len(turns) if pause_after is None else min(pause_after, len(turns))
            mem.record_turns(user_id, conv["conversation_id"], turns[:cut], at,
                             model=model.model_name)
            if pause_after is not None:  # quiet: the sweep takes what was said so far
                for done in conversations.sweep({user_id}, at + timedelta(seconds=quiet_s),
                                                idle_s=10**9):
                    done.result(timeout=600)
                if turns[cut:]:
                    mem.record_turns(user_id, conv["conversation_id"], turns[cut:], at,
                                     model=model.model_name)
            future = conversations.close(user_id, conv["conversation_id"], at)
            if future is not None:
                future.result(timeout=600)
            spent = usage.usage_metadata.get(model.model_name, {})
            memories = sum(1 for e in mem.edges(user_id)
                           if conv["conversation_id"] in e.conversations)
            rows.append({"conversation": conv["conversation_id"],
                         "calls": model.calls - calls, "chars": model.input_chars - chars,
                         "input": spent.get("input_tokens", 0),
                         "output": spent.get("output_tokens", 0), "memories": memories})
    finally:
        conversations.shutdown()
    return rows


def measure(mem: Any, model: MeteredModel, user_id: str) -> list[dict[str, Any]]:
    """Record and close each sample conversation for `user_id`, in order; per close: calls,
    input and output tokens (summed by the usage callback), request characters, remembered."""
    conversations = Conversations(mem)
    rows = []
    try:
        for conv in samples():
            at = parse_instant(conv["at"])
            mem.record_turns(user_id, conv["conversation_id"], conv["transcript"], at,
                             model=model.model_name)
            usage = UsageMetadataCallbackHandler()
            model.callbacks = [usage]
            calls, chars = model.calls, model.input_chars
            future = conversations.close(user_id, conv["conversation_id"], at)
            result = future.result(timeout=600) if future is not None else {}
            spent = usage.usage_metadata.get(model.model_name, {})
            remembered = result.get("remembered") or {}
            rows.append({"conversation": conv["conversation_id"],
                         "user_words": sum(len(t["content"].split()) for t in conv["transcript"]
                                           if t["role"] == "user"),
                         "calls": model.calls - calls, "chars": model.input_chars - chars,
                         "input": spent.get("input_tokens", 0),
                         "output": spent.get("output_tokens", 0),
                         "memories": len(remembered.get("edges_created", []))})
    finally:
        conversations.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print, don't update docs/")
    args = parser.parse_args()
    scripts = {next(t["content"] for t in conv["transcript"] if t["role"] == "user"):
               tool_calls(conv["batch"]) for conv in samples()}
    tokenizer = str(Path(model_path("all-MiniLM-L6-v2")) / "tokenizer.json")
    model = MeteredModel(scripts=scripts, tokenizer_file=tokenizer)
    lines = ["| answer | conversation | user words | calls | input tokens | output tokens "
             "| request characters | memories committed |", "|---|---|---|---|---|---|---|---|"]
    totals = {}
    with memory(llm=model) as mem:
        for shape, described in SHAPES.items():
            model.shape = shape
            rows = measure(mem, model, f"extraction-cost-{shape}")
            for r in rows:
                lines.append(f"| {described} | {r['conversation']} | {r['user_words']} "
                             f"| {r['calls']} | {r['input']:,} | {r['output']:,} "
                             f"| {r['chars']:,} | {r['memories']} |")
            totals[shape] = rows
        model.shape = "together"
        sessions = {
            "close only": split_session(mem, model, "extraction-cost-close-only", None),
            "in-session, quiet 90 s after the last turn": split_session(
                mem, model, "extraction-cost-pause-end", 99),
            "in-session, quiet 90 s after the second turn": split_session(
                mem, model, "extraction-cost-pause-middle", 2),
            "in-session, quiet 16 min after the last turn": split_session(
                mem, model, "extraction-cost-long-end", 99, 960.0),
            "in-session, quiet 16 min after the second turn": split_session(
                mem, model, "extraction-cost-long-middle", 2, 960.0)}
    lines.append("")
    for shape, rows in totals.items():
        n = len(rows)
        lines.append(f"- {SHAPES[shape]}: per close {sum(r['calls'] for r in rows) / n:.1f} "
                     f"calls, {sum(r['input'] for r in rows) / n:,.0f} input and "
                     f"{sum(r['output'] for r in rows) / n:,.0f} output tokens (mean of {n})")
    lines += ["", "Each sample conversation recorded as the proxy records it and closed by the "
              "close worker, on one user per answer shape (so the second and third closes "
              "see the first's memories in KNOWN MEMORY, as a user's later closes do). Calls "
              "counted by the scripted model; tokens reported by it per call (the embedding "
              "model's word-piece tokenizer over the OpenAI-shaped request and answer) and "
              "summed by langchain-core's UsageMetadataCallbackHandler. A merge review, had "
              "one been asked for, would be among the calls."]
    base = sessions["close only"]
    lines += ["", "Consolidated during the session (the model answers `finish` with the records; "
              "a later part is answered with what its own turns say):", "",
              "| how | calls | input tokens | output tokens | request characters | memories "
              "| input × close-only | calls × close-only |", "|---|---|---|---|---|---|---|---|"]
    for how, rows in sessions.items():
        total = {k: sum(r[k] for r in rows) for k in ("calls", "input", "output", "chars",
                                                        "memories")}
        lines.append(f"| {how} | {total['calls']} | {total['input']:,} | {total['output']:,} "
                     f"| {total['chars']:,} | {total['memories']} "
                     f"| {total['input'] / max(sum(r['input'] for r in base), 1):.2f} "
                     f"| {total['calls'] / max(sum(r['calls'] for r in base), 1):.2f} |")
    lines += ["", "Totals over the three sample conversations, each on its own user. Target "
              "(#46): in-session consolidation within 1.5× the close-only cost."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Extraction cost", "python -m benchmarks.extraction_cost", machine(),
                      lines)


if __name__ == "__main__":
    main()
