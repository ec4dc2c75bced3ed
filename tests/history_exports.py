"""Chat-history exports written to ChatGPT's and Claude's documented `conversations.json`
formats, made up here (never a person's): several hundred conversations, with what real
exports hold besides the conversation (system and tool messages, hidden context, edited
branches, image parts, empty and tool-use blocks, attachments).

`FACTS`: what some conversations say, and `SiblingExtractor` a chat model that extracts them,
so a test can look for them after extraction."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tests.helpers import call

START = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
TOPICS = ["a sourdough starter", "the Lisbon trip", "a Python script that renames photos",
          "stretching after running", "a birthday present", "the garden's tomatoes",
          "learning Norwegian", "a cover letter", "the car's brakes", "a chess opening"]
# (conversation number, what the person said): the facts extraction is asked to find
FACTS = {7: "By the way, my sister Maya is training for the Oslo marathon in June.",
         123: "My sister Maya moved to Bergen last month.",
         211: "My brother Tomas is a carpenter in Porto."}


def _words(rng: random.Random, topic: str, n: int) -> str:
    return f"About {topic}: " + " ".join(rng.choice(
        ["what", "do", "you", "think", "should", "I", "try", "next", "today", "maybe",
         "really", "again", "first"]) for _ in range(n)) + "?"


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class _Tree:
    """A ChatGPT `mapping` being written: nodes under their parents, each message later."""

    def __init__(self, rng: random.Random, at: float) -> None:
        self.rng, self.at = rng, at
        self.root = _id(rng)
        self.mapping: dict[str, dict] = {self.root: {"id": self.root, "message": None,
                                                      "parent": None, "children": []}}

    def add(self, parent: str, role: str, parts: list, content_type: str = "text",
            recipient: str = "all", hidden: bool = False) -> str:
        self.at += self.rng.randint(5, 300)
        key = _id(self.rng)
        metadata = {"is_visually_hidden_from_conversation": True} if hidden else {}
        self.mapping[key] = {"id": key, "parent": parent, "children": [], "message": {
            "id": key, "author": {"role": role, "name": None, "metadata": {}},
            "create_time": self.at, "update_time": None,
            "content": {"content_type": content_type, "parts": parts},
            "status": "finished_successfully", "end_turn": role == "assistant" or None,
            "weight": 1.0, "metadata": metadata, "recipient": recipient, "channel": None}}
        self.mapping[parent]["children"].append(key)
        return key


def chatgpt_export(count: int = 300, seed: int = 1) -> list[dict]:
    """ChatGPT's conversations.json: each conversation's `mapping` a tree of nodes whose main
    branch runs from `current_node` back through `parent`."""
    rng = random.Random(seed)
    conversations = []
    for number in range(count):
        started = START + timedelta(hours=7 * number, minutes=rng.randint(0, 50))
        tree = _Tree(rng, started.timestamp())
        mapping, root, add = tree.mapping, tree.root, tree.add
        last = add(root, "system", [""], hidden=True)
        last = add(last, "user", ["The user's custom instructions"], hidden=True)
        topic = rng.choice(TOPICS)
        turns = rng.randint(1, 5)
        for turn in range(turns):
            said = _words(rng, topic, rng.randint(4, 14))
            if turn == 0 and number in FACTS:
                said = f"{FACTS[number]} {said}"
            if turn == 1 and number % 10 == 3:
                # an edited message: the abandoned branch stays in the mapping
                abandoned = add(last, "user", [f"ABANDONED draft {number}"])
                add(abandoned, "assistant", [f"ABANDONED reply {number}"])
            if number % 17 == 5 and turn == 0:
                last = add(last, "user", [{"content_type": "image_asset_pointer",
                                           "asset_pointer": "file-service://file-x",
                                           "width": 640, "height": 480}, said],
                           content_type="multimodal_text")
            else:
                last = add(last, "user", [said])
            if number % 11 == 2 and turn == 0:  # a tool call and its output, not said
                call = add(last, "assistant", ['search("weather")'], content_type="code",
                           recipient="browser")
                last = add(call, "tool", ["Sunny, 21°C"], content_type="text")
            last = add(last, "assistant", [f"Here is what I think about {topic} ({turn})."])
        conversation_id = _id(rng)
        conversations.append({
            "title": f"Chat about {topic}", "create_time": started.timestamp(),
            "update_time": tree.at, "mapping": mapping, "moderation_results": [],
            "current_node": last, "plugin_ids": None, "conversation_id": conversation_id,
            "conversation_template_id": None, "gizmo_id": None, "is_archived": False,
            "safe_urls": [], "default_model_slug": "gpt-4o", "id": conversation_id})
    rng.shuffle(conversations)  # exports are not in date order
    return conversations


def claude_export(count: int = 250, seed: int = 2) -> list[dict]:
    """Claude's conversations.json: each conversation's `chat_messages` in order, `sender`
    human or assistant, the words in `text` and in `content` parts."""
    rng = random.Random(seed)
    account = {"uuid": _id(rng)}
    conversations = []
    for number in range(count):
        started = START + timedelta(hours=9 * number, minutes=rng.randint(0, 50))
        at = started
        topic = rng.choice(TOPICS)
        messages = []
        for turn in range(rng.randint(1, 4)):
            said = _words(rng, topic, rng.randint(4, 14))
            if turn == 0 and number in FACTS:
                said = f"{FACTS[number]} {said}"
            for sender, text in (("human", said),
                                 ("assistant", f"Thoughts on {topic}, part {turn}.")):
                at += timedelta(seconds=rng.randint(5, 300))
                stamp = at.isoformat().replace("+00:00", "Z")
                content = [{"type": "text", "text": text, "start_timestamp": stamp,
                            "stop_timestamp": stamp, "citations": []}]
                if sender == "assistant" and number % 13 == 4:
                    content.insert(0, {"type": "tool_use", "name": "web_search",
                                       "input": {"query": topic}})
                messages.append({
                    "uuid": _id(rng), "text": text, "content": content, "sender": sender,
                    "created_at": stamp, "updated_at": stamp,
                    "attachments": ([{"file_name": "notes.txt", "file_size": 12,
                                      "file_type": "text/plain",
                                      "extracted_content": "attached notes"}]
                                    if sender == "human" and number % 19 == 0 else []),
                    "files": []})
        if number % 23 == 9:  # an empty reply (a stopped generation)
            messages.append({"uuid": _id(rng), "text": "", "content": [], "sender": "assistant",
                             "created_at": messages[-1]["created_at"],
                             "updated_at": messages[-1]["created_at"], "attachments": [],
                             "files": []})
        conversations.append({
            "uuid": _id(rng), "name": f"About {topic}",
            "created_at": started.isoformat().replace("+00:00", "Z"),
            "updated_at": messages[-1]["created_at"], "account": account,
            "chat_messages": messages})
    rng.shuffle(conversations)
    return conversations


class SiblingExtractor(BaseChatModel):
    """Extracts `my sister|brother NAME` from whatever transcript it is sent, and nothing else;
    counts its calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "sibling-extractor"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        said = str(messages[1].content).split("KNOWN MEMORY")[0]
        calls = []
        for n, (kind, name) in enumerate(re.findall(r"\b[Mm]y (sister|brother) (\w+)", said)):
            words = re.sub(r"^(TRANSCRIPT|USER: )", "", said, flags=re.M)
            sentence = next(s for s in re.split(r"(?<=[.?])\s+|\n", words) if name in s)
            relation = "HAS_SISTER" if kind == "sister" else "HAS_BROTHER"
            calls += [call("record_entity", 10 * n + 1, name=name, kind="PERSON",
                           confidence=0.9),
                      call("record_relation", 10 * n + 2, source="User", relation=relation,
                           target=name, confidence=0.9, stability="stable",
                           cardinality="one_to_many", snippet=sentence.strip())]
        message = AIMessage(content="", tool_calls=[*calls, call("finish", 99)])
        return ChatResult(generations=[ChatGeneration(message=message)])
