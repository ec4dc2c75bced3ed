"""Seeds come from the key_centred vector index, filtered per user inside the index (design
§7.3). Each test is built so that the index path can fail: other tenants with the same names,
a small user inside a big index, more keys above the threshold than the first search asks for.
The exact scan over all of a user's keys (`exact=True`) is the oracle."""

from datetime import UTC, datetime

from pegasus import Memory, cypher
from pegasus.text import content_words
from tests.helpers import rel

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
NAMES = ["Sarah", "Acme", "Lisbon", "Tokyo", "Priya", "Northwind"]


def _batch(tag: str, names: list[str]) -> dict:
    return {
        "entities": [{"name": n, "kind": "PERSON" if n in ("Sarah", "Priya") else "THING"}
                     for n in names],
        "relations": [rel("User", "KNOWS", n, snippet=f"{tag} talked about {n}") for n in names],
    }


def _ids(mem: Memory, user: str) -> dict[str, str]:
    return {e["name"]: e["id"] for e in mem.store.read("read/partition_entities", user_id=user, ids=None)}


def _agree(mem: Memory, user: str, text: str, threshold: float) -> tuple[dict, dict]:
    words = content_words(text)
    engine = mem.recall_engine
    fast = engine.seeds(user, words, threshold)
    exact = engine.seeds(user, words, threshold, exact=True)
    assert fast.entity_scores.keys() == exact.entity_scores.keys()
    assert fast.labels.keys() == exact.labels.keys()
    for key, value in exact.entity_scores.items():
        assert abs(fast.entity_scores[key] - value) < 1e-4
    return fast.entity_scores, exact.entity_scores


def test_tenants_sharing_every_name_get_only_their_own_seeds(settings, user_id):
    users = [f"{user_id}-{i}" for i in range(25)]
    tight = settings.model_copy(update={"seed_candidates": 2})
    with Memory(tight) as mem:
        for user in users:
            mem.commit(user, "c1", _batch(user, NAMES), at=T0)
        own = {user: set(_ids(mem, user).values()) for user in users}
        for user in users[::6]:
            fast, _ = _agree(mem, user, "Sarah from Acme flew to Lisbon and Tokyo", 0.30)
            assert fast and set(fast) <= own[user]
            recall = mem.recall(user, "what did Sarah say about Acme", at=T0)
            assert recall.context and all(line.startswith(f"{user} talked") for line in recall.context)


def test_a_small_user_in_a_big_index_finds_its_keys(settings, user_id):
    crowd, small = user_id + "-crowd", user_id + "-small"
    with Memory(settings) as mem:
        for part in range(3):  # 1,500 keys of another user, many of them near the small one's
            names = [f"{n} {part}-{i}" for i in range(250) for n in ("Sarah", "Lisbon")]
            mem.commit(crowd, f"c{part}", {
                "entities": [{"name": n, "kind": "THING"} for n in names],
                "relations": [rel("User", "KNOWS", n) for n in names]}, at=T0)
        mem.commit(small, "c1", _batch(small, ["Sarah", "Lisbon"]), at=T0)
        fast, _ = _agree(mem, small, "Sarah moved to Lisbon", 0.30)
        ids = _ids(mem, small)
        assert set(fast) == {ids["Sarah"], ids["Lisbon"]}


def _sixty_sarahs(mem: Memory, user: str) -> None:
    """Sixty people named "Sarah <i>": more keys above 0.30 of "Sarah" than a word may seed."""
    names = [f"Sarah {i}" for i in range(60)]
    mem.commit(user, "c1", {
        "entities": [{"name": n, "kind": "PERSON"} for n in names],
        "relations": [rel("User", "KNOWS", n) for n in names]}, at=T0)


def test_more_keys_above_the_threshold_than_first_asked_are_all_found(settings, user_id):
    """Sixty entities all named like the word: the first search (3 keys) cannot hold them, so
    the search must go deeper (3 → 12 → 48) until it holds the word's cap of seeds
    (`seeds_per_word`, 32): the same 32 the exact scan picks."""
    tight = settings.model_copy(update={"seed_candidates": 3})
    with Memory(tight) as mem:
        _sixty_sarahs(mem, user_id)
        fast, exact = _agree(mem, user_id, "Sarah", 0.30)
    assert len(exact) == tight.seeds_per_word == 32  # deeper than the first two searches
    assert fast.keys() == exact.keys()


def test_the_seed_query_runs_in_the_vector_index(raw_driver):
    plan = raw_driver.execute_query(
        "CYPHER 25 EXPLAIN " + cypher.load("read/seed_keys").split("CYPHER 25", 1)[1],
        user_id="u", n=4, search={"words": [{"word": 0, "vector": [0.1] * 384}]}).summary.plan

    def operators(node):
        yield node["operatorType"], node.get("args", {}).get("Details", "")
        for child in node.get("children", []):
            yield from operators(child)

    found = list(operators(plan))
    assert any(op.startswith("NodeVectorIndexSearch") and "key_centred" in details
               and "user_id = $user_id" in details for op, details in found), found


def test_a_user_whose_words_needed_a_deeper_search_starts_there_next_time(settings, user_id):
    """Sixty "Sarah" entities and a first depth of 3: the first recall asks 3, 12, 48; the
    next one starts at 48 and asks once, with the same seeds as the exact scan. Another user
    of few keys still starts at 3."""
    tight = settings.model_copy(update={"seed_candidates": 3})
    with Memory(tight) as mem:
        _sixty_sarahs(mem, user_id)
        mem.commit(user_id + "-few", "c1", _batch(user_id + "-few", ["Sarah", "Lisbon"]), at=T0)
        engine, asked = mem.recall_engine, []
        query = engine.store.read

        def counting(name, **params):
            if name == "read/seed_keys":
                asked.append((params["user_id"], params["n"]))
            return query(name, **params)

        engine.store.read = counting
        try:
            _agree(mem, user_id, "Sarah", 0.30)
            first = [n for u, n in asked if u == user_id]
            asked.clear()
            fast, exact = _agree(mem, user_id, "Sarah", 0.30)
            again = [n for u, n in asked if u == user_id]
            asked.clear()
            _agree(mem, user_id + "-few", "Sarah", 0.30)
            few = [n for u, n in asked if u == user_id + "-few"]
        finally:
            engine.store.read = query
    assert first[:3] == [3, 12, 48]
    assert again == [48]
    assert len(exact) == 32 and fast.keys() == exact.keys()
    assert few == [3]


def test_the_remembered_depths_are_bounded(settings, user_id):
    """Past `depth_hints_kept` users the engine forgets the hints and starts over, so a server
    with many users does not grow without bound; a forgotten user starts at the first depth."""
    tight = settings.model_copy(update={"seed_candidates": 3, "depth_hints_kept": 2})
    with Memory(tight) as mem:
        _sixty_sarahs(mem, user_id)
        for other in ("-a", "-b"):
            mem.commit(user_id + other, "c1", _batch(user_id + other, ["Sarah"]), at=T0)
        engine = mem.recall_engine
        _agree(mem, user_id, "Sarah", 0.30)
        assert engine._depth_needed == {user_id: 48}
        _agree(mem, user_id + "-a", "Sarah", 0.30)
        assert len(engine._depth_needed) == 2
        _agree(mem, user_id + "-b", "Sarah", 0.30)
        assert engine._depth_needed == {user_id + "-b": 3}
