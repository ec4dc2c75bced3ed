"""The peers' own retrieval, offline and with no LLM, fed the memories Pegasus is fed.

Benchmark-only: `pip install -e .[peers]` (graphiti-core, mem0ai). Nothing in the library or the
suite imports this module.

- Graphiti (graphiti-core): each speaker's extraction batches as Graphiti's own graph, written
  directly (no `add_episode`, which would call an LLM): one `EntityNode` per entity, one
  `EntityEdge` per relation whose fact is the snippet, valid at the session's time, one
  `EpisodicNode` per session with `MENTIONS` to its entities, the group id the user. Searched
  with Graphiti's recipes that need no cross-encoder: hybrid (BM25 + cosine) with reciprocal
  rank fusion, and the same with breadth-first search from the user's node. Graphiti gets a
  throwaway Neo4j of its own (its indexes cover labels Pegasus also uses).
- mem0 (mem0ai): each snippet as a memory (`infer=False`, no LLM), dated with the session's
  time, in a local Qdrant folder; searched per user. Dense only: mem0's BM25 leg (fastembed) and
  entity boost (spaCy) cannot be installed here.

Both embed with the project's model (all-MiniLM-L6-v2), so only retrieval differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pegasus.models.recall import ShownSnippet
from pegasus.text import fold

os.environ.setdefault("EMBEDDING_DIM", "384")
os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
os.environ.setdefault("MEM0_TELEMETRY", "false")

INSTALL = "the peers are an optional extra: pip install -e '.[peers]' (or pass --no-peers)"
LIMIT = 60  # results asked of a peer per search; more than any word budget here can show


@dataclass(frozen=True)
class Fact:
    """One relation of one speaker's batch: what every system is given."""

    user: str
    session: int
    at: datetime
    source: str
    relation: str
    target: str
    snippet: str


@dataclass(frozen=True)
class Found:
    """One result a peer returns: its words and when they were said."""

    text: str
    said_at: datetime | None

    @property
    def line(self) -> str:
        """Rendered as Pegasus renders a [CONTEXT] line, so words are counted the same way."""
        return ShownSnippet(text=self.text, edge_id="", said_at=self.said_at).line


def check_installed() -> None:
    try:
        import graphiti_core  # noqa: F401
        import mem0  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"{exc.name} is not installed: {INSTALL}") from exc


def _embedder(embed: Callable):
    """The project's model behind Graphiti's EmbedderClient interface."""
    from graphiti_core.embedder.client import EmbedderClient

    class MiniLM(EmbedderClient):
        async def create(self, input_data):
            text = input_data if isinstance(input_data, str) else list(input_data)[0]
            return [float(x) for x in embed([text])[0]]

        async def create_batch(self, input_data_list):
            return [[float(x) for x in v] for v in embed(list(input_data_list))]

    return MiniLM()


def _no_llm():
    """Graphiti's LLM and cross-encoder clients, which these recipes never call."""
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig

    class NoLLM(LLMClient):
        async def _generate_response(self, *args, **kwargs):
            raise AssertionError("the benchmark's Graphiti recipes must not call an LLM")

    class NoCrossEncoder(CrossEncoderClient):
        async def rank(self, query, passages):
            raise AssertionError("the benchmark's Graphiti recipes must not rerank")

    return NoLLM(LLMConfig(api_key="unused", model="unused")), NoCrossEncoder()


class GraphitiPeer:
    """Graphiti on its own throwaway Neo4j; one event loop for its async driver."""

    def __init__(self, uri: str, embed: Callable) -> None:
        from graphiti_core import Graphiti

        llm, cross = _no_llm()
        self.loop = asyncio.new_event_loop()
        self.embed = embed
        self.graphiti = Graphiti(uri, "neo4j", "unused", llm_client=llm,
                                 embedder=_embedder(embed), cross_encoder=cross)
        self.user_node: dict[str, str] = {}
        self.run(self.graphiti.build_indices_and_constraints())

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.graphiti.close())
        self.loop.close()

    def load(self, facts: list[Fact], speakers_of: dict[str, str],
             sessions: dict[tuple[str, int], str]) -> None:
        """Every fact as an edge between entity nodes of its user, one episode per session."""
        from graphiti_core.edges import EntityEdge, EpisodicEdge
        from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode
        from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

        nodes: dict[tuple[str, str], EntityNode] = {}

        def node(user: str, name: str, at: datetime) -> EntityNode:
            key = (user, fold(name))
            if key not in nodes:
                nodes[key] = EntityNode(name=name, group_id=user, labels=["Entity"],
                                        created_at=at)
            return nodes[key]

        for user, speaker in speakers_of.items():
            first = min((f.at for f in facts if f.user == user), default=None)
            if first is not None:
                self.user_node[user] = node(user, speaker, first).uuid
        episodes: dict[tuple[str, int], EpisodicNode] = {}
        edges: list[EntityEdge] = []
        mentions: dict[tuple[str, int], set[str]] = {}
        vectors = self.embed([f.snippet for f in facts])
        for fact, vector in zip(facts, vectors, strict=True):
            key = (fact.user, fact.session)
            if key not in episodes:
                episodes[key] = EpisodicNode(
                    name=f"session {fact.session}", group_id=fact.user,
                    source=EpisodeType.message, source_description="LoCoMo session",
                    content=sessions.get(key, ""), valid_at=fact.at, created_at=fact.at)
            source, target = node(fact.user, fact.source, fact.at), node(fact.user, fact.target,
                                                                          fact.at)
            edge = EntityEdge(
                group_id=fact.user, source_node_uuid=source.uuid, target_node_uuid=target.uuid,
                created_at=fact.at, name=fact.relation, fact=fact.snippet,
                fact_embedding=[float(x) for x in vector], episodes=[episodes[key].uuid],
                valid_at=fact.at, reference_time=fact.at)
            edges.append(edge)
            episodes[key].entity_edges.append(edge.uuid)
            mentions.setdefault(key, set()).update({source.uuid, target.uuid})
        names = list(nodes.values())
        for n, vector in zip(names, self.embed([n.name for n in names]), strict=True):
            n.name_embedding = [float(x) for x in vector]
        episodic_edges = [
            EpisodicEdge(group_id=key[0], source_node_uuid=episodes[key].uuid,
                         target_node_uuid=uuid, created_at=episodes[key].valid_at)
            for key, uuids in mentions.items() for uuid in sorted(uuids)]
        self.run(add_nodes_and_edges_bulk(self.graphiti.driver, list(episodes.values()),
                                          episodic_edges, names, edges, self.graphiti.embedder))

    def searcher(self, bfs: bool) -> Callable[[str, str], list[Found]]:
        """Hybrid RRF over the user's facts; with bfs, plus breadth-first from the user's node."""
        from graphiti_core.search.search_config import (
            EdgeReranker,
            EdgeSearchConfig,
            EdgeSearchMethod,
            SearchConfig,
        )

        methods = [EdgeSearchMethod.bm25, EdgeSearchMethod.cosine_similarity]
        if bfs:
            methods.append(EdgeSearchMethod.bfs)
        config = SearchConfig(edge_config=EdgeSearchConfig(search_methods=methods,
                                                           reranker=EdgeReranker.rrf),
                              limit=LIMIT)

        def search(user: str, question: str) -> list[Found]:
            origin = [self.user_node[user]] if bfs and user in self.user_node else None
            results = self.run(self.graphiti.search_(question, config=config, group_ids=[user],
                                                     bfs_origin_node_uuids=origin))
            return [Found(e.fact, e.valid_at) for e in results.edges]

        return search


class Mem0Peer:
    """mem0's Memory with local Qdrant in a temporary folder and the project's model."""

    def __init__(self, folder: str, model: str) -> None:
        import warnings

        from mem0 import Memory as Mem0

        # mem0 2.2.1 calls a sentence-transformers method since renamed: not ours to fix.
        warnings.filterwarnings("ignore", category=FutureWarning, module="mem0")

        self.memory = Mem0.from_config({
            "vector_store": {"provider": "qdrant",
                             "config": {"path": os.path.join(folder, "qdrant"),
                                        "collection_name": "locomo",
                                        "embedding_model_dims": 384, "on_disk": True}},
            "embedder": {"provider": "huggingface", "config": {"model": model}},
            "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "unused"}},
            "history_db_path": os.path.join(folder, "history.db"),
        })

    def load(self, facts: list[Fact]) -> None:
        for fact in facts:
            self.memory.add([{"role": "user", "content": fact.snippet}], user_id=fact.user,
                            metadata={"said_at": fact.at.isoformat()}, infer=False)

    def search(self, user: str, question: str) -> list[Found]:
        hits = self.memory.search(question, filters={"user_id": user}, top_k=LIMIT,
                                  threshold=0.0)
        results = hits["results"] if isinstance(hits, dict) else hits
        return [Found(r["memory"], _when((r.get("metadata") or {}).get("said_at")))
                for r in results]


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


Search = Callable[[str, str], list[Found]]


class PeerCache:
    """The peers' ranked results and timings of one conversation, kept in a JSON file: the
    peers don't change when Pegasus does, so a later run (`--peers-cache`) takes each peer's
    results again at the words Pegasus shows now, without loading the peers."""

    def __init__(self, path: Path, conversation: str) -> None:
        self.path = path
        self.conversation = conversation
        whole = json.loads(path.read_text()) if path.exists() else {}
        self.entry: dict | None = whole.get(conversation)
        self.results: dict[str, dict[str, dict[str, list]]] = {}

    def searchers(self) -> dict[str, Search]:
        """The cached results as name -> search(user, question)."""
        assert self.entry is not None

        def lookup(results: dict[str, dict[str, list]]) -> Search:
            return lambda user, question: [Found(text, _when(at))
                                           for text, at in results[user][question]]

        return {name: lookup(results) for name, results in self.entry["results"].items()}

    def timings(self) -> dict[str, list[float]]:
        assert self.entry is not None
        return self.entry["ms"]

    def recording(self, peers: dict[str, Search]) -> dict[str, Search]:
        """The live peers, each search's results kept for `save`."""
        def record(name: str, search: Search) -> Search:
            def recorded(user: str, question: str) -> list[Found]:
                found = search(user, question)
                self.results.setdefault(name, {}).setdefault(user, {})[question] = [
                    [f.text, f.said_at.isoformat() if f.said_at else None] for f in found]
                return found
            return recorded

        return {name: record(name, search) for name, search in peers.items()}

    def save(self, ms: dict[str, list[float]]) -> None:
        """This conversation's recorded results and the peers' timings, beside the others'."""
        whole = json.loads(self.path.read_text()) if self.path.exists() else {}
        whole[self.conversation] = {"results": self.results,
                                    "ms": {name: ms[name] for name in self.results}}
        self.path.write_text(json.dumps(whole))


@contextlib.contextmanager
def peers(facts: list[Fact], speakers_of: dict[str, str],
          sessions: dict[tuple[str, int], str], embed: Callable, model: str
          ) -> Iterator[dict[str, Callable[[str, str], list[Found]]]]:
    """Each peer loaded with the facts, as name -> search(user, question); timings printed.
    The caller has run `check_installed` (before its own load, to fail fast)."""
    from pegasus.operations.neo4j_local import LocalNeo4j

    for name in ("graphiti_core", "mem0", "neo4j.notifications", "httpx", "qdrant_client"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with (LocalNeo4j.throwaway(heap="512m", pagecache="256m") as state,
          tempfile.TemporaryDirectory(prefix="pegasus-mem0-") as folder):
        began = time.monotonic()
        graphiti = GraphitiPeer(state.bolt_uri, embed)
        graphiti.load(facts, speakers_of, sessions)
        print(f"  Graphiti loaded {len(facts)} facts in {time.monotonic() - began:.0f} s")
        began = time.monotonic()
        mem0 = Mem0Peer(folder, model)
        mem0.load(facts)
        print(f"  mem0 loaded {len(facts)} memories in {time.monotonic() - began:.0f} s")
        try:
            yield {"Graphiti hybrid RRF": graphiti.searcher(bfs=False),
                   "Graphiti + BFS from user": graphiti.searcher(bfs=True),
                   "mem0 dense": mem0.search}
        finally:
            graphiti.close()
