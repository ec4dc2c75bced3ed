"""Reading a page in Chromium while it may be navigating."""

from __future__ import annotations

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
