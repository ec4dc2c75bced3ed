"""The Opencode plugin (TypeScript) builds with tsc and passes its Node test-runner tests."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "opencode"


def test_the_opencode_plugin_builds_and_its_tests_pass():
    npm = shutil.which("npm")
    assert npm, "npm not found: ./run installs Node.js and npm from Debian packages"
    if not (PLUGIN / "node_modules" / "typescript").is_dir():
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=PLUGIN, check=True,
                       capture_output=True, timeout=600)
    result = subprocess.run([npm, "test"], cwd=PLUGIN, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)$", result.stdout, re.M)[1])
    failed = int(re.search(r"^# fail (\d+)$", result.stdout, re.M)[1])
    assert (passed, failed) == (5, 0), result.stdout[-4000:]
