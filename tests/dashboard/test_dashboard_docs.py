"""Every help link of the dashboard opens the project's own docs, served by the local cluster and
rendered in the page at the linked section."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from browser_support import Dashboard, wait_for
from mpijob.api import names
from mpijob.api.trainer import failures

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "web" / "src"


def test_a_guide_link_opens_its_section(dash: Dashboard) -> None:
    dash.go("#/docs/troubleshooting.md#program-failed")
    heading = dash.one("h2#program-failed, h3#program-failed", visible=True)
    wait_for(lambda: dash.js("return arguments[0].getBoundingClientRect().top < window.innerHeight", heading),
             "the linked section scrolled into view")
    assert "program" in heading.text.lower()
    dash.go("#/docs/dashboard.md")
    link = dash.one('main a[href$="#/docs/troubleshooting.md"]')  # a link between docs stays in the page
    link.click()
    dash.one("h1", visible=True)
    assert dash.driver.current_url.endswith("#/docs/troubleshooting.md")


def test_the_failure_anchors_are_failures_own_and_every_linked_doc_exists() -> None:
    copied = dict(re.findall(r"^\s+(\w+): '([a-z0-9-]+)',$", (SRC / "details" / "model.js").read_text(), re.M))
    assert copied == failures.ANCHORS, "web/src/details/model.js FAILURE_ANCHORS drifted from mpijob/api/trainer/failures.py"
    guide = (REPO / failures.GUIDE).read_text()
    headings = {re.sub(r"[^\w\s-]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.+)$", guide, re.M)}
    assert set(failures.ANCHORS.values()) <= headings
    linked = set(re.findall(r"\$\{DOCS\}/([\w./-]+\.md)", "\n".join(p.read_text() for p in SRC.rglob("*.js*"))))
    assert linked and all((REPO / "docs" / f).is_file() or f == "README.md" for f in linked), linked


def test_docs_are_served_as_text_and_nothing_outside_them(server: object) -> None:
    with httpx.Client(base_url=server.url, verify=False) as c:  # type: ignore[attr-defined]  # noqa: S501
        doc = c.get(f"{names.DASHBOARD_PATH}/docs/troubleshooting.md")
        assert doc.status_code == 200 and doc.headers["content-type"].startswith("text/plain")
        assert "Content-Security-Policy" in doc.headers and "# " in doc.text
        assert c.get(f"{names.DASHBOARD_PATH}/docs/README.md").text.startswith("# mpijob")
        for probe in ("%2e%2e/pyproject.toml", "..%2fMakefile", "nothing.md"):
            assert c.get(f"{names.DASHBOARD_PATH}/docs/{probe}").status_code == 404, probe

