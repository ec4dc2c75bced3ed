"""Reading a page in Chromium while it may be navigating; checking it with axe-core."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

# What Chromium says when the body a read started from was replaced by a navigation: as a
# stale element, or (seen in CI) as an inspector error about a node "not in the document".
REPLACED = ("does not belong to the document", "stale element", "No node with given id",
            "Execution context was destroyed", "Cannot find context")


def page_text(browser) -> str:
    """The page's visible text, read in one script call; "" while a navigation replaces the
    document (a wait polls again). Any other driver error is raised."""
    try:
        return browser.execute_script(
            "return document.body ? document.body.innerText : '';") or ""
    except StaleElementReferenceException:
        return ""
    except WebDriverException as error:
        if any(phrase in (error.msg or "") for phrase in REPLACED):
            return ""
        raise


AXE = Path(__file__).resolve().parent / "axe"
# What fails a page: axe-core's two worst impacts, on the WCAG 2.x A and AA rules (colour
# contrast among them) and its best practices.
SEVERE = ("serious", "critical")


@functools.cache
def axe_source() -> str:
    """axe-core's browser build, installed (pinned, tests/e2e/axe) from npm the first time."""
    script = AXE / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        assert npm, "npm not found: ./run installs Node.js and npm from Debian packages"
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=AXE, check=True,
                       capture_output=True, timeout=600)
    return script.read_text(encoding="utf-8")


def axe_violations(browser) -> list[str]:
    """The serious and critical accessibility violations axe-core finds on the page shown,
    one line each (rule, impact, the first element it names)."""
    # Injected through the driver, not the page: the page's policy allows no inline script.
    browser.execute_script(axe_source())
    found = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: "
        "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})"
        ".then(r => done(r.violations.map(v => [v.id, v.impact, v.nodes.length,"
        " v.nodes[0] ? v.nodes[0].target.join(' ') : ''])))"
        ".catch(e => done([['axe failed', 'critical', 0, String(e)]]));")
    return [f"{rule} ({impact}, {n}x): {where}" for rule, impact, n, where in found
            if impact in SEVERE]
