"""`pegasus doctor`'s hook check, for a person whose PATH lacks Pegasus's bin folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pegasus.doctor import HOOK_EVENTS, _hooks


def test_a_hook_not_on_path_is_told_where_pegasus_hook_is(tmp_path, monkeypatch):
    """./run installs pegasus-hook in its venv, which is not on PATH: the one thing to do
    names the program's full path beside the interpreter running doctor."""
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"hooks": {event: [{"hooks": [
        {"type": "command", "command": f"pegasus-hook {event}"}]}] for event in HOOK_EVENTS}}))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    check = _hooks("Claude Code hooks", config)
    beside = Path(sys.executable).parent
    assert (check.part, check.state) == ("Claude Code hooks", "problem")
    assert check.detail == (f"{config} runs 'pegasus-hook', which is not on PATH: use its full "
                            f"path {beside / 'pegasus-hook'} in the commands, or put {beside} on "
                            "PATH")
