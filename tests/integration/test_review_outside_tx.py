"""Merge review runs before the write transaction (design §6): a slow reviewer blocks no one."""

import threading

from pegasus import Memory
from tests.helpers import ScriptedReviewer, edges, entities, rel


class SleepyReviewer:
    """Answers by candidate name; the first review lasts until `release` is set (or
    `sleep_s`): the test decides when it ends, so no timing a busy machine can break."""

    def __init__(self, answers: dict[str, float], sleep_s: float) -> None:
        self.answers, self.sleep_s = answers, sleep_s
        self.calls: list[list[str]] = []
        self.reviewing, self.woke = threading.Event(), threading.Event()
        self.release = threading.Event()

    def review(self, proposed, candidates, conversation):
        self.calls.append(sorted(c.entity.name for c in candidates))
        if len(self.calls) == 1:
            self.reviewing.set()
            self.release.wait(self.sleep_s)
            self.woke.set()
        return {c.entity.id: self.answers.get(c.entity.name, 0.0) for c in candidates}


def test_a_slow_review_holds_up_no_commit_and_no_recall(settings, raw_driver, user_id):
    other = f"{user_id}-other"
    reviewer = SleepyReviewer({"Sarah Kim": 0.95, "Sarah Kimball": 0.1}, sleep_s=300.0)
    with Memory(settings) as plain, Memory(settings, reviewer=reviewer,
                                           embedder=plain.embedder) as reviewed:
        plain.commit(user_id, "c1", {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
                                     "relations": [rel("User", "KNOWS", "Sarah Kim",
                                                       "I know Sarah Kim from climbing")]})
        outcome: dict = {}
        slow = threading.Thread(target=lambda: outcome.update(report=reviewed.commit(
            user_id, "c2", {"entities": [{"name": "Sarah K.", "kind": "PERSON"}],
                            "relations": [rel("User", "CLIMBS_WITH", "Sarah K.",
                                              "I climb with Sarah K. on Sundays")]})))
        slow.start()
        assert reviewer.reviewing.wait(60)
        # While the reviewer sleeps: another user's commit, this user's recall, and a second
        # commit of this user, which adds a name the pending review must now consider too.
        plain.commit(other, "o1", {"relations": [rel("User", "LIKES", "Tea", "I like tea")]})
        recall = plain.recall(user_id, "climbing with Sarah Kim")
        plain.commit(user_id, "c3", {"entities": [{"name": "Sarah Kimball", "kind": "PERSON"}],
                                     "relations": [rel("User", "WORKS_WITH", "Sarah Kimball",
                                                       "I work with Sarah Kimball")]})
        assert not reviewer.woke.is_set()  # all three finished during the review
        reviewer.release.set()
        slow.join(120)
    assert "I know Sarah Kim from climbing" in recall.context
    report = outcome["report"]
    assert [(m.name, m.into) for m in report.merged] == [("Sarah K.", "Sarah Kim")]
    # The first review saw one candidate; the partition moved, so the pair was asked again.
    assert reviewer.calls == [["Sarah Kim"], ["Sarah Kim", "Sarah Kimball"]]
    names = sorted(e["name"] for e in entities(raw_driver, user_id))
    assert names == ["Sarah Kim", "Sarah Kimball", "User"]
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} == {
        ("User", "KNOWS", "Sarah Kim"), ("User", "CLIMBS_WITH", "Sarah Kim"),
        ("User", "WORKS_WITH", "Sarah Kimball")}
    assert [t for _, t, _, _ in edges(raw_driver, other)] == ["LIKES"]


def test_the_reviewer_is_asked_once_outside_any_transaction_though_each_is_retried(
        settings, raw_driver, user_id, monkeypatch):
    """Every read and write transaction of the commit fails once with a lost connection after
    its work (the driver runs it again): the reviewer is still asked exactly once, and never
    while a transaction is open."""
    from neo4j.exceptions import ServiceUnavailable

    settings = settings.model_copy(update={"neo4j_retry_time_s": 30.0})
    reviewer = ScriptedReviewer({"Sarah Kim": 0.95})
    open_transactions: list[str] = []
    asked_inside: list[bool] = []
    attempts: list[str] = []
    review = reviewer.review

    def watched_review(proposed, candidates, conversation):
        asked_inside.append(bool(open_transactions))
        return review(proposed, candidates, conversation)

    reviewer.review = watched_review
    with Memory(settings) as plain, Memory(settings, reviewer=reviewer,
                                           embedder=plain.embedder) as reviewed:
        plain.commit(user_id, "c1", {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
                                     "relations": [rel("User", "KNOWS", "Sarah Kim",
                                                       "I know Sarah Kim from climbing")]})

        def failing_once(kind, original):
            def run_unit(fn):
                failed: list[bool] = []

                def once(tx):
                    open_transactions.append(kind)
                    try:
                        result = fn(tx)
                    finally:
                        open_transactions.pop()
                    attempts.append(kind)
                    if not failed:
                        failed.append(True)
                        raise ServiceUnavailable("connection reset by peer")
                    return result
                return original(once)
            return run_unit

        monkeypatch.setattr(reviewed.store, "read", failing_once("read", reviewed.store.read))
        monkeypatch.setattr(reviewed.store, "write", failing_once("write", reviewed.store.write))
        report = reviewed.commit(user_id, "c2", {
            "entities": [{"name": "Sarah K.", "kind": "PERSON"}],
            "relations": [rel("User", "CLIMBS_WITH", "Sarah K.",
                              "I climb with Sarah K. on Sundays")]})
    assert reviewer.calls == [("Sarah K.", ["Sarah Kim"])]
    assert asked_inside == [False]
    # Two review reads (one to find the question, one to resolve with its answer) and the
    # write, each run twice by the driver.
    assert attempts == ["read", "read", "read", "read", "write", "write"]
    assert [(m.name, m.into) for m in report.merged] == [("Sarah K.", "Sarah Kim")]
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} == {
        ("User", "KNOWS", "Sarah Kim"), ("User", "CLIMBS_WITH", "Sarah Kim")}
