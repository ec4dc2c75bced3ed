"""How benchmarks.replicas reads the extraction log (pure). The second case is the run CI
found: the killed replica's model call finished, the replica died before the close was marked
closed, and another replica did the close again; that is one extraction cut off, not a double."""

from benchmarks.replicas import extraction_counts

DEAD, LIVE, OTHER = "100", "200", "300"


def test_every_close_finished_once():
    calls = [("extract", "a", DEAD), ("finish", "a", DEAD),
             ("extract", "b", LIVE), ("finish", "b", LIVE)]
    counts = extraction_counts(calls, DEAD, ["a", "b"], ["a"])
    assert counts["extractions_completed"] == 2 and counts["double_extractions"] == 0
    assert counts["of_those_left_unfinished_when_it_died"] == 0
    assert counts["finished_by_the_killed_replica_before_its_commit"] == 0


def test_a_finish_the_killed_replica_never_committed_is_cut_off_and_redone():
    calls = [("extract", "a", DEAD), ("finish", "a", DEAD),  # killed before the commit
             ("extract", "b", DEAD),  # killed mid-extraction
             ("extract", "a", LIVE), ("finish", "a", LIVE),
             ("extract", "b", OTHER), ("finish", "b", OTHER)]
    counts = extraction_counts(calls, DEAD, ["a", "b"], ["a", "b"])
    assert counts["extractions_completed"] == 2 and counts["double_extractions"] == 0
    assert counts["missing_extractions"] == 0 and counts["extractions_cut_off"] == 2
    assert counts["finished_by_the_killed_replica_before_its_commit"] == 1
    assert counts["of_those_left_unfinished_when_it_died"] == 2
    assert counts["finished_by_the_others"] == 2


def test_two_live_replicas_finishing_one_close_is_a_double():
    calls = [("extract", "a", LIVE), ("finish", "a", LIVE),
             ("extract", "a", OTHER), ("finish", "a", OTHER)]
    counts = extraction_counts(calls, DEAD, ["a", "b"], [])
    assert counts["double_extractions"] == 1 and counts["missing_extractions"] == 1
