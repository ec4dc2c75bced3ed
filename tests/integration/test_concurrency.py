"""Two processes committing for the same user at once (the Partition lock, docs/decisions.md)."""

import subprocess
import sys
import textwrap

from tests.helpers import edges, entities

WRITER = textwrap.dedent("""
    import json, sys
    from pegasus import Memory, Settings
    user, tag = sys.argv[1], sys.argv[2]
    with Memory(Settings()) as mem:  # NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD from the env
        mem.embedder.embed(["warm"])
        print("ready", flush=True)
        sys.stdin.readline()  # both start writing at the same moment
        for i in range(6):
            mem.commit(user, f"{tag}-{i}", {
                "entities": [{"name": "Sarah", "kind": "PERSON"}, {"name": "Acme", "kind": "ORG"},
                             {"name": f"Thing {tag} {i}", "kind": "THING"}],
                "relations": [
                    {"source": "User", "relation": "HAS_BOSS", "target": "Sarah",
                     "snippet": "my boss Sarah"},
                    {"source": "Sarah", "relation": "WORKS_AT", "target": "Acme",
                     "snippet": "Sarah works at Acme"},
                    {"source": "User", "relation": "OWNS", "target": f"Thing {tag} {i}",
                     "snippet": f"I own thing {tag} {i}"}]})
        print("done", flush=True)
""")


def test_concurrent_commits_of_one_user_create_no_duplicates_and_lose_no_edge(
        settings, raw_driver, user_id, neo4j_env):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, user_id, tag], env=neo4j_env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for tag in ("a", "b")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "done"
    names = [e["name"] for e in entities(raw_driver, user_id)]
    assert sorted(set(names)) == sorted(names)  # no duplicates
    assert names.count("Sarah") == 1 and names.count("Acme") == 1 and names.count("User") == 1
    triples = [(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)]
    assert len(triples) == len(set(triples)) == 2 + 12
    boss = next(p for a, t, b, p in edges(raw_driver, user_id) if t == "HAS_BOSS")
    # Every commit cited it; none was lost.
    assert sorted(boss["conversations"]) == sorted(f"{t}-{i}" for t in "ab" for i in range(6))
