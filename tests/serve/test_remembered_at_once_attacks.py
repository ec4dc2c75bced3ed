"""Attacks on "remembered at once" through serve (design §7.11, §9): closing another user's
conversation id, and the user's words in /metrics."""

from __future__ import annotations

import httpx
import pytest

from tests.serve.test_proxy import KEY_A, proxy

KEY_B = "key-bruno-0002"
WORD = "Quokkazanzibar"


@pytest.fixture
def two_users(user_id):
    return f"{user_id}-a", f"{user_id}-b"


def test_closing_another_users_conversation_is_404_and_leaves_it_open(settings, two_users):
    alice, bruno = two_users
    with proxy(settings, two_users) as (client, _, memory, app):
        client(KEY_A).chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": f"my pet is {WORD}"}],
            extra_headers={"X-Pegasus-Conversation": "chat-a"})
        answer = httpx.post(app.state.url + "/v1/conversations/chat-a/close", json={},
                            headers={"Authorization": f"Bearer {KEY_B}"}, timeout=30)
        assert answer.status_code == 404
        assert memory.conversation_state(alice, "chat-a")["status"] == "open"
        assert not memory.conversation_state(bruno, "chat-a")["exists"]
        # and bruno's recall, in a chat of that very id, gets nothing of alice's turn
        recall = httpx.post(app.state.url + "/v1/memory/recall",
                            json={"text": f"what is my pet {WORD}?"},
                            headers={"Authorization": f"Bearer {KEY_B}"}, timeout=30)
        assert recall.status_code == 200 and WORD not in recall.text
        metrics = httpx.get(app.state.url + "/metrics", timeout=30)
        assert metrics.status_code == 200 and WORD.lower() not in metrics.text.lower()
