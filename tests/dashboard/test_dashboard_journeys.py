"""The dashboard's journeys (FR-015..018) in a real browser against a real server with its controllers:
log in from `mpijob dashboard --print-url`, create a 2-node job with the form (after the server's
dry run pointed at the bad fields), watch it run and complete on its page without a reload, open every
tab, search its logs; read why a failed job failed, clone it, fix it and resubmit it; a second user sees
nothing of the first user's namespace, and a viewer is offered no action they may not take; the jobs
list follows the server within a second.

Each step saves a screenshot (the directory is printed at the end of the run).
"""

from __future__ import annotations

import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from browser_support import STATES, Dashboard, describe, log_in, seen_texts, wait_for, watch_text
from mpijob.store.server_process import ServerInfo
from selenium.webdriver.common.by import By

from support import TRAINER, add_user, create, finished_as, trainjob, wait_finished

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
TABS = ["Overview", "Configuration", "Workers", "Logs", "Metrics", "Events", "Stacks"]
# The program the form submits: every rank prints a line, then works for 3 s (seen Running).
FORM_COMMAND = ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK greets the dashboard"; sleep 3']
# Harmless console errors: a 403/404 the page asked for and showed as such (a forbidden namespace, a
# job that is not there), which Chromium logs as "Failed to load resource" though the page handled it.
EXPECTED_REFUSALS = r"Failed to load resource: the server responded with a status of (403|404)"
# The create form's dry runs of a job with a mistake in it are answered 422: that is how the page learns
# which field is wrong, and shows it there.
DRY_RUN_422 = r"\?dryRun=All - Failed to load resource: the server responded with a status of 422"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def row(name: str, namespace: str = "default") -> str:
    return f'tr[data-job="{namespace}/{name}"]'


def state_in_row(dash: Dashboard, name: str, namespace: str = "default") -> str:
    els = dash.find(f'{row(name, namespace)} [data-testid="job-state"]')
    return els[0].text.strip() if els else ""


def field_error(dash: Dashboard, path: str) -> str:
    els = [e for e in dash.find(f'[data-testid="error-{path}"]') if e.is_displayed()]
    return els[0].text.strip() if els else ""


def header_state(dash: Dashboard) -> str:
    els = dash.find('[data-testid="job-state"]')
    return els[0].text.strip() if els else ""


def open_tab(dash: Dashboard, title: str) -> None:
    """Click the details tab titled exactly `title`; its id lands in the URL and it is selected."""
    tab = wait_for(lambda: [t for t in dash.find('[role="tab"]') if t.text.strip() == title], f"the {title} tab", 10)[0]
    tab.click()
    wait_for(lambda: dash.driver.current_url.endswith(f"/{title.lower()}"), f"the URL of the {title} tab", 10)
    wait_for(lambda: [t for t in dash.find('[role="tab"][aria-selected="true"]') if t.text.strip() == title],
             f"the {title} tab to be selected", 10)


def tab_titles(dash: Dashboard) -> list[str]:
    wait_for(lambda: len(dash.find('[role="tab"]')) >= len(TABS), "the details tabs", 20)
    return [t.text.strip() for t in dash.find('[role="tab"]')]


# -- journeys ---------------------------------------------------------------------------------------------


def test_log_in_from_the_cli_link_and_see_the_jobs_list(dash: Dashboard, finished_job: dict[str, Any]) -> None:
    name = finished_job["metadata"]["name"]
    assert dash.text_of('[data-testid="user"]') == "mpijob-admin"
    dash.go("#/jobs")
    dash.one('table[aria-label="Training jobs"]')
    dash.wait_text(f'{row(name)} [data-testid="job-state"]', lambda t: t == "Succeeded", f"{name} listed as Succeeded")
    cells = dash.one(row(name)).text
    assert name in cells and "default" in cells, cells
    dash.screenshot("jobs-list")


def test_create_a_two_node_job_with_the_form_and_watch_it_complete(dash: Dashboard, api: httpx.Client) -> None:
    name = unique("form")
    dash.go("#/jobs")
    dash.button("Create job").click()
    wait_for(lambda: "#/create" in dash.driver.current_url, "the create form's URL")
    dash.mark_no_reload()
    # a bad name, then 0 nodes: the server's dry run names each field where it was entered (it reports
    # the first invalid field of a job, so one at a time)
    dash.type_into(dash.field("Command"), "\n".join(FORM_COMMAND))
    dash.type_into(dash.field("Nodes"), "2")
    dash.type_into(dash.field("Name"), "Bad_Name")
    # the error about this name: a dry run of the job before the name was typed says it is missing
    error = dash.wait_text('[data-testid="error-metadata.name"]', lambda t: "Bad_Name" in t,
                           "the server's error at the name field, about Bad_Name")
    assert "Bad_Name" in error and ("RFC 1035" in error or "lower-case" in error), error
    dash.screenshot("create-form-name-error")
    dash.type_into(dash.field("Name"), name)
    dash.gone('[data-testid="error-metadata.name"]')
    dash.type_into(dash.field("Nodes"), "0")
    error = dash.wait_text('[data-testid="error-spec.trainer.numNodes"]', bool, "the server's error at the nodes field")
    assert "at least 1" in error, error
    dash.screenshot("create-form-nodes-error")
    dash.type_into(dash.field("Nodes"), "2")
    dash.gone('[data-testid="error-spec.trainer.numNodes"]')
    wait_for(lambda: dash.text_of('[data-testid="dry-run-state"]') and not field_error(dash, "metadata.name"),
             "the dry run of the fixed job")
    dash.screenshot("create-form")
    dash.button("Create").click()
    # the details page of the new job, in the same document
    wait_for(lambda: dash.driver.current_url.split("#", 1)[1].startswith(f"/jobs/default/{name}"),
             "the new job's details page", 20)
    assert dash.text_of('[data-testid="job-name"]') == name
    watch_text(dash, "header", '[data-testid="job-state"]')
    created = wait_for(lambda: api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").json(), "the job")
    assert created["spec"]["trainer"]["numNodes"] == 2 and created["spec"]["trainer"]["command"] == FORM_COMMAND
    dash.wait_text('[data-testid="job-state"]', lambda t: t == "Running", "the job to show Running", 60)
    dash.screenshot("details-running")
    dash.wait_text('[data-testid="job-state"]', lambda t: t == "Succeeded", "the job to show Succeeded", 90)
    seen = [t for _, t in seen_texts(dash, "header")]
    assert "Running" in seen and seen[-1] == "Succeeded", seen
    assert all(t in STATES for t in seen if t), seen
    assert seen.index("Running") < seen.index("Succeeded"), seen
    assert finished_as(wait_finished(api, name)) == "Complete"
    assert not dash.reloaded(), "the page reloaded while the job ran"
    # every tab, with its own content
    assert tab_titles(dash) == TABS
    for title in TABS:
        open_tab(dash, title)
        if title == "Overview":
            dash.one('[data-testid="job-numbers"]')
        elif title == "Configuration":
            dash.wait_text("code, pre", lambda t: "numNodes: 2" in t, "the job's YAML with numNodes: 2")
        elif title == "Workers":
            wait_for(lambda: len(dash.find('[data-testid="workers-table"] tbody tr')) >= 2, "the launcher and node pods")
        elif title == "Logs":
            for rank in (0, 1):
                dash.wait_text('[data-testid="log-lines"]', lambda t, r=rank: f"rank {r} greets the dashboard" in t,
                               f"rank {rank}'s line in the merged log", 30)
        elif title == "Metrics":
            dash.one('[data-testid^="chart-"], [data-testid="no-usage"]')
        elif title == "Events":
            wait_for(lambda: dash.find('[data-testid="event-row"]'), "the job's events")
        elif title == "Stacks":  # a finished job has none (a running one's: test_dashboard_stacks.py)
            assert not dash.one('[data-testid="read-stacks"]').is_enabled()
        dash.screenshot(f"details-{title.lower()}")
    # search the logs: every match marked
    open_tab(dash, "Logs")
    search = dash.one('input[aria-label="Search logs"]')
    dash.type_into(search, "greets")
    marks = wait_for(lambda: [m.text for m in dash.find('[data-testid="log-lines"] mark')], "marked matches")
    assert len(marks) >= 2 and all(m.lower() == "greets" for m in marks), marks
    dash.screenshot("details-logs-search")
    assert not dash.reloaded(), "the page reloaded while its tabs were opened"


def test_read_a_failed_jobs_cause_then_clone_fix_and_resubmit_it(dash: Dashboard, api: httpx.Client) -> None:
    name = unique("broken")
    create(api, trainjob(name, ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK gives up"; exit 3']))
    assert finished_as(wait_finished(api, name)) == "Failed"
    dash.go(f"#/jobs/default/{name}")
    dash.mark_no_reload()
    alert = dash.wait_text('[data-testid="failure-reason"]', lambda t: "ProgramFailed" in t,
                           "the failure alert naming the class ProgramFailed", 30)
    guide = dash.one('[data-testid="failure-reason"] a[href*="troubleshooting.md"]')
    assert guide.get_attribute("href").endswith("docs/troubleshooting.md#program-failed"), guide.get_attribute("href")
    assert "exit" in alert.lower() or "exited" in alert.lower() or "status 3" in alert, alert
    assert header_state(dash) == "Failed"
    dash.screenshot("details-failed")
    # clone it: the form, prefilled under a new name; fix the command and create it
    dash.one('[data-testid="clone-job"]').click()
    wait_for(lambda: "#/create" in dash.driver.current_url and "clone=" in dash.driver.current_url, "the clone form")
    name_field = dash.field("Name")
    wait_for(lambda: name_field.get_attribute("value") == f"{name}-2", f"the clone's name {name}-2", 10)
    command = dash.field("Command")
    before = command.get_attribute("value")
    assert "exit 3" in before, before
    dash.screenshot("clone-form")
    dash.type_into(command, before.replace("exit 3", "exit 0"))
    wait_for(lambda: not dash.find('[data-testid^="error-"]') or not any(e.text for e in dash.find('[data-testid^="error-"]')),
             "no field error on the fixed clone")
    dash.button("Create").click()
    clone = f"{name}-2"
    wait_for(lambda: dash.driver.current_url.split("#", 1)[1].startswith(f"/jobs/default/{clone}"),
             "the clone's details page", 20)
    dash.wait_text('[data-testid="job-state"]', lambda t: t == "Succeeded", "the clone to succeed", 90)
    assert get_command(api, clone)[-1].endswith("exit 0"), get_command(api, clone)
    assert not dash.reloaded()
    dash.screenshot("clone-succeeded")


def get_command(api: httpx.Client, name: str) -> list[str]:
    return list(api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").json()["spec"]["trainer"]["command"])


@pytest.fixture(scope="module")
def tenants(server: ServerInfo, kubectl: Kubectl, api: httpx.Client) -> dict[str, Any]:
    """Team a's and team b's namespaces, each with a suspended job; user `b` edits in b only, user
    `viewer` may only view team a's namespace."""
    suffix = uuid.uuid4().hex[:5]
    out: dict[str, Any] = {}
    for team in ("a", "b"):
        ns = f"team-{team}-{suffix}"
        kubectl("create", "namespace", ns)
        job = f"job-{team}-{suffix}"
        create(api, trainjob(job, ["true"], num_nodes=1, suspend=True), ns)
        out[team] = {"ns": ns, "job": job}
    out["b"]["user"] = f"user-b-{suffix}"
    kubectl("create", "rolebinding", "b-edit", "--clusterrole=edit", f"--user={out['b']['user']}", "-n", out["b"]["ns"])
    out["viewer"] = {"user": f"viewer-{suffix}", "ns": out["a"]["ns"]}
    kubectl("create", "rolebinding", "viewer", "--clusterrole=view", f"--user={out['viewer']['user']}", "-n", out["a"]["ns"])
    for who in ("b", "viewer"):
        out[who]["kubeconfig"] = add_user(server.home, out[who]["user"])
    return out


def test_a_second_user_sees_nothing_of_the_first_users_namespace(new_dashboard: Any, server: ServerInfo,
                                                                 tenants: dict[str, Any]) -> None:
    a, b = tenants["a"], tenants["b"]
    dash: Dashboard = new_dashboard("user-b")
    log_in(dash, server.home, b["kubeconfig"], user=b["user"])
    dash.go("#/jobs")
    dash.one(row(b["job"], b["ns"]))
    wait_for(lambda: state_in_row(dash, b["job"], b["ns"]) == "Suspended", "b's own job listed as Suspended")
    keys = [r.get_attribute("data-job") for r in dash.find("tr[data-job]")]
    assert keys == [f"{b['ns']}/{b['job']}"], keys  # nothing of team a, nor of default
    assert a["ns"] not in dash.js("return document.body.innerText")
    dash.screenshot("user-b-jobs")
    # a's job by its URL: refused, and nothing of it shown
    dash.go(f"#/jobs/{a['ns']}/{a['job']}")
    text = dash.wait_text("main", lambda t: "forbidden" in t.lower() or "not found" in t.lower() or "cannot" in t.lower(),
                          "a forbidden or not-found state for team a's job")
    assert not dash.find('[data-testid="job-name"]') and not dash.find('[role="tab"]'), text
    assert not dash.find('[data-testid="delete-job"]') and not dash.find('[data-testid="clone-job"]')
    dash.screenshot("user-b-forbidden")
    bad = dash.console.csp_violations() + dash.console.severe([EXPECTED_REFUSALS])
    assert not bad, describe(bad)


def test_a_viewer_is_offered_no_action_they_may_not_take(new_dashboard: Any, server: ServerInfo,
                                                         tenants: dict[str, Any]) -> None:
    viewer, a = tenants["viewer"], tenants["a"]
    dash: Dashboard = new_dashboard("viewer")
    log_in(dash, server.home, viewer["kubeconfig"], user=viewer["user"])
    dash.go("#/jobs")
    dash.one(row(a["job"], a["ns"]))
    wait_for(lambda: state_in_row(dash, a["job"], a["ns"]) == "Suspended", "team a's job, for the viewer")
    time.sleep(1)  # the access reviews answered (a button that would appear late is caught here)
    offered = dash.buttons()
    assert "Create job" not in offered, offered
    assert not dash.find(f'{row(a["job"], a["ns"])} [aria-label="Actions for {a["job"]}"]') or \
        not {"Delete", "Suspend", "Resume"} & set(open_row_menu(dash, a["job"], a["ns"])), "the row offers writes"
    dash.go(f"#/jobs/{a['ns']}/{a['job']}")
    dash.wait_text('[data-testid="job-name"]', lambda t: t == a["job"], "team a's job's page, for the viewer")
    time.sleep(1)
    for testid in ("delete-job", "suspend-job", "resume-job", "clone-job"):
        assert not dash.find(f'[data-testid="{testid}"]'), f"the viewer is offered {testid}"
    assert not {"Delete", "Suspend", "Resume", "Create", "Clone and edit"} & set(dash.buttons()), dash.buttons()
    dash.screenshot("viewer-details")


def open_row_menu(dash: Dashboard, name: str, namespace: str) -> list[str]:
    dash.one(f'{row(name, namespace)} [aria-label="Actions for {name}"]').click()
    items = wait_for(lambda: [e.text.strip() for e in dash.find('[role="menuitem"]')], "the row's menu")
    dash.driver.find_element(By.TAG_NAME, "body").click()
    return items


def test_the_jobs_list_follows_the_server_within_a_second(dash: Dashboard, api: httpx.Client) -> None:
    name = unique("live")
    create(api, trainjob(name, ["sleep", "60"], num_nodes=1))
    path = f"{TRAINER}/namespaces/default/trainjobs/{name}"
    dash.go("#/jobs")
    dash.mark_no_reload()
    cell = f'{row(name)} [data-testid="job-state"]'
    dash.wait_text(cell, lambda t: t in ("Queued", "Starting", "Running"), f"{name} listed as not suspended", 30)
    delays = []
    try:
        for i in range(3):
            watch_text(dash, f"live{i}", cell)
            start = time.time() * 1000
            r = api.patch(path, json={"spec": {"suspend": True}}, headers={"Content-Type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text
            changed = wait_for(lambda k=f"live{i}": [s for s in seen_texts(dash, k) if s[1] == "Suspended"],
                               f"{name}'s state cell to show Suspended", 10)
            delays.append(changed[0][0] - start)
            if i == 0:
                dash.screenshot("jobs-list-suspended")
            r = api.patch(path, json={"spec": {"suspend": False}}, headers={"Content-Type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text
            dash.wait_text(cell, lambda t: t != "Suspended", f"{name} resumed", 30)
    finally:
        api.delete(path)
    print(f"\njobs list: server change -> state cell, ms: {[round(d) for d in delays]}")
    assert statistics.median(delays) < 1000 and max(delays) < 2000, delays
    assert not dash.reloaded()


def test_no_journey_made_the_browser_report_a_csp_violation_or_an_error(dash: Dashboard) -> None:
    violations = dash.console.csp_violations()
    assert not violations, "CSP violations:\n" + describe(violations)
    errors = dash.console.severe([DRY_RUN_422])
    assert not errors, "errors in the browser console:\n" + describe(errors)
