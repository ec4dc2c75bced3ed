"""Merge review runs before the write transaction (design §6): a slow reviewer blocks no one."""

import threading

from pegasus import Memory
from tests.helpers import edges, entities, rel


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
