"""The type check of the package: mypy over src/ ([tool.mypy] in pyproject.toml) finds nothing.

Its cache lives under $PEGASUS_HOME (beside the venv), so after the first run only the changed
modules are checked again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# A first, cold run checks every module (a minute or two on 2 idle cores, more when loaded).
@pytest.mark.timeout(1500)
def test_mypy_finds_nothing_in_src():
    home = Path(os.environ.get("PEGASUS_HOME", Path.home() / ".cache" / "pegasus"))
    cache = home / "mypy-cache"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-color-output"],
        cwd=ROOT, capture_output=True, text=True, timeout=1500,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
