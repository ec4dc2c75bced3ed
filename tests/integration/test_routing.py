"""Through a routing URI (neo4j://), as on a cluster: the write, read and decay paths work,
reads go through read transactions, and the store chains bookmarks so a recall right after a
commit sees it (design §12, "Scaling out")."""

from __future__ import annotations

from datetime import UTC, datetime

from pegasus import Memory
from tests.helpers import rel

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def test_commit_recall_decay_and_forget_through_a_routing_uri(settings, user_id):
    routed = settings.model_copy(update={
        "neo4j_uri": settings.neo4j_uri.replace("bolt://", "neo4j://", 1)})
    assert routed.neo4j_uri.startswith("neo4j://")
    with Memory(routed) as mem:
        mem.verify()
        before = mem.store.bookmarks.get_bookmarks()
        mem.commit(user_id, "c1", {"relations": [
            rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline")]}, at=T1)
        assert mem.store.bookmarks.get_bookmarks() - before, "the commit's bookmark is chained"
        # read-your-writes: the next read carries the commit's bookmark
        assert "moved the deadline" in mem.recall(user_id, "my boss Sarah", at=T1).render()
        report = mem.consolidate(at=datetime(2026, 4, 1, tzinfo=UTC), user_id=user_id)
        assert report.edges == 1
        [edge] = mem.memories(user_id)
        assert 0 < edge.strength < 100
        assert mem.forget_everything(user_id).memories == 1
        assert mem.recall(user_id, "my boss Sarah", at=T1).render() == ""
