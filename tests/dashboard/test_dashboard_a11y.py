"""Accessibility of every page of the dashboard: axe-core (web/node_modules/axe-core, pinned in
web/package-lock.json, injected by WebDriver) finds no violation of impact serious or critical on the
jobs list, the create form and its YAML mode, each of the six tabs of a finished job's details, the
queues, the cluster and the history; and the keyboard reaches what a mouse would: Tab gets to the search
box and to a job's link, Enter on a details tab switches to it.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Dashboard, axe_report, describe, wait_for
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

TABS = ["overview", "configuration", "workers", "logs", "metrics", "events", "stacks"]
PAGES = ["jobs", "create", "create-yaml", *(f"details-{t}" for t in TABS), "queues", "cluster", "history",
         "docs/troubleshooting.md"]


def show(dash: Dashboard, page: str, job: str) -> None:
    """Navigate to `page` and wait until it has rendered what axe should look at."""
    if page == "jobs":
        dash.go("#/jobs")
        dash.one(f'tr[data-job="default/{job}"]')
    elif page == "create":
        dash.go("#/create")
        dash.one("main form")
    elif page == "create-yaml":
        dash.go("#/create")
        dash.one("main form")
        yaml_mode(dash)
    elif page.startswith("details-"):
        tab = page.removeprefix("details-")
        dash.go(f"#/jobs/default/{job}/{tab}")
        dash.wait_text('[role="tab"][aria-selected="true"]', lambda t: t.strip().lower() == tab, f"the {tab} tab")
        if tab == "logs":
            dash.wait_text('[data-testid="log-lines"]', lambda t: "says hello" in t, "the job's log lines")
        if tab == "workers":
            wait_for(lambda: dash.find('[data-testid="workers-table"] tbody tr'), "the worker pods")
        if tab == "events":
            wait_for(lambda: dash.find('[data-testid="event-row"]'), "the events")
        if tab == "stacks":
            dash.one('[data-testid="read-stacks"]')
    else:
        dash.go(f"#/{page}")
    dash.settled(page)


def yaml_mode(dash: Dashboard) -> None:
    """Switch the create page to its YAML editor (a toggle, tab or button named YAML)."""
    if not dash.find('[aria-label="TrainJob YAML"]'):
        dash.button("YAML").click()
    dash.one('[aria-label="TrainJob YAML"]')


@pytest.fixture(scope="module")
def job(finished_job: dict[str, Any]) -> str:
    return str(finished_job["metadata"]["name"])


@pytest.mark.parametrize("page", PAGES)
def test_axe_finds_no_serious_violation(dash: Dashboard, job: str, page: str) -> None:
    show(dash, page, job)
    found = dash.axe(page)
    dash.screenshot(f"a11y-{page}")
    assert not found, f"axe-core: serious or critical violations on {page}:\n" + axe_report({page: found})


def focused(dash: Dashboard) -> dict[str, Any]:
    return dict(dash.js("""
        const el = document.activeElement;
        const row = el && el.closest('tr[data-job]');
        return {tag: el.tagName.toLowerCase(), label: el.getAttribute('aria-label') || '',
                text: (el.textContent || '').trim().slice(0, 60), role: el.getAttribute('role') || '',
                row: row ? row.getAttribute('data-job') : ''};
    """))


def tab_until(dash: Dashboard, want: Any, what: str, limit: int = 80) -> list[dict[str, Any]]:
    """Press Tab until the focused element satisfies `want`; the elements passed on the way."""
    path = []
    for _ in range(limit):
        ActionChains(dash.driver).send_keys(Keys.TAB).perform()
        now = focused(dash)
        path.append(now)
        if want(now):
            return path
    raise AssertionError(f"Tab never reached {what} in {limit} presses; focus went through:\n"
                         + "\n".join(f"  {p}" for p in path))


def test_the_keyboard_reaches_the_search_box_and_a_job(dash: Dashboard, job: str) -> None:
    dash.load("#/jobs")  # focus starts at the document
    dash.one(f'tr[data-job="default/{job}"]')
    dash.settled("jobs")
    tab_until(dash, lambda f: f["tag"] == "input" and f["label"] == "Search jobs", "the jobs search box")
    ActionChains(dash.driver).send_keys(job).perform()
    wait_for(lambda: [r.get_attribute("data-job") for r in dash.find("tr[data-job]")] == [f"default/{job}"],
             "the list filtered to the typed name")
    tab_until(dash, lambda f: f["tag"] == "a" and f["row"] == f"default/{job}", f"the link of {job}'s row")
    ActionChains(dash.driver).send_keys(Keys.ENTER).perform()
    wait_for(lambda: dash.driver.current_url.split("#", 1)[1].startswith(f"/jobs/default/{job}"),
             "Enter on the row's link to open the job")


def test_enter_on_a_details_tab_switches_to_it(dash: Dashboard, job: str) -> None:
    dash.load(f"#/jobs/default/{job}")
    dash.one('[role="tab"]')
    dash.settled("details")
    tab_until(dash, lambda f: f["role"] == "tab" and f["text"] == "Overview", "the Overview tab")
    # PatternFly's tabs are buttons in the Tab order; move to Events with Tab and switch with Enter
    tab_until(dash, lambda f: f["role"] == "tab" and f["text"] == "Events", "the Events tab", limit=10)
    ActionChains(dash.driver).send_keys(Keys.ENTER).perform()
    wait_for(lambda: dash.driver.current_url.endswith("/events"), "Enter on the Events tab to switch to it", 10)
    dash.wait_text('[role="tab"][aria-selected="true"]', lambda t: t.strip() == "Events", "Events selected")


def test_no_page_made_the_browser_report_a_csp_violation_or_an_error(dash: Dashboard) -> None:
    bad = dash.console.csp_violations() + dash.console.severe()
    assert not bad, describe(bad)
