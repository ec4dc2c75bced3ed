"""Three `pegasus serve` replicas on one Neo4j; one is killed with SIGKILL mid-run
(benchmarks.replicas, at a size the suite can afford; the benchmark runs 50 users)."""

from __future__ import annotations

from benchmarks.replicas import run


def test_a_killed_replica_loses_no_turn_and_no_close_runs_twice(settings, neo4j_env,
                                                                tmp_path):
    figures = run({**neo4j_env, "PEGASUS_DECAY_IN_SERVE": "true"}, tmp_path, users=8,
                  conversations=2, turns=2, replicas=3, wait_s=180)
    assert figures["killed_after_s"] is not None  # replica 0 died halfway
    assert figures["conversations"] == 16
    assert figures["turns_accepted"] == 32  # a balancer's retry: every turn got through
    assert figures["turns_lost"] == 0
    assert figures["closes_accepted"] == 16
    assert figures["closes_unfinished"] == 0
    assert figures["extractions_completed"] == 32  # each turn once (per turn: design §9)
    assert figures["double_extractions"] == 0 and figures["missing_extractions"] == 0
    assert figures["finished_by_the_others"] == figures["of_those_left_unfinished_when_it_died"]
    assert figures["decay_passes"] == 1  # three replicas, a clean database: one pass
