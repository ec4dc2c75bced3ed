"""Two `pegasus migrate` processes at once apply each version exactly once (design §2)."""

import os
import subprocess
import sys

from neo4j import GraphDatabase

from pegasus import cypher


def test_two_migrate_processes_at_once_apply_each_version_once(private_server):
    state = private_server.start()
    env = {**os.environ, "NEO4J_URI": state.bolt_uri, "HF_HUB_OFFLINE": "1"}
    env.pop("NEO4J_PASSWORD", None)
    runs = [subprocess.Popen([sys.executable, "-m", "pegasus", "migrate"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    applied = [line.removeprefix("applied ") for out, _ in outputs for line in out.splitlines()
               if line.startswith("applied ")]
    names = [m.path.name for m in cypher.migrations()]
    assert sorted(applied) == sorted(names)  # every file once, by one of the two
    with GraphDatabase.driver(state.bolt_uri, auth=None) as driver:
        versions = [r["v"] for r in driver.execute_query(
            "MATCH (m:PegasusMigration) RETURN m.version AS v ORDER BY v").records]
        lock = driver.execute_query(
            "MATCH (l:PegasusMigrationLock) RETURN l.holder AS holder").records
    assert versions == [m.version for m in cypher.migrations()]
    assert [r["holder"] for r in lock] == [None]  # released
