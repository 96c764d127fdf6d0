"""The dashboard's jobs list in headless Chromium against a real server holding 100, then 1,000
TrainJobs: first paint, time to a usable list, and how long a change on the server takes to reach the
screen — against a static HTML page of the same rows served over HTTPS on loopback.

    .venv/bin/python bench/dashboard.py [--runs N] [--sizes 100,1000]

Needs what `make test` needs (Debian's chromium and chromium-driver, the .venv with selenium, and the
built page: `make dashboard`). Prints one JSON object; exit 0 whenever every measure ran, 1 with a message
on stderr when something failed to run. Never asserts on the figures.

What is measured, per size (N jobs in namespace `default`, made through the API on a server started with
`MPIJOB_NO_CONTROLLERS=1`, so none runs and each stays Queued; the list shows its first page, 50 rows):

* **dashboard** — a full load of `https://127.0.0.1:PORT/dashboard/#/jobs` in a browser already logged
  in (the session cookie from `mpijob dashboard`'s login link). Clocks are the page's own
  (`performance.now()`, from the navigation's start):
  * `first_contentful_paint_ms`: the `first-contentful-paint` entry of `performance.getEntriesByType('paint')`
    (the shell, before any job is known).
  * `table_ready_ms`: when the table first holds its first page of rows (`tr[data-job]` count reaches
    min(N, 50)), seen by a MutationObserver injected before the page's own scripts
    (`Page.addScriptToEvaluateOnNewDocument`, which the page's CSP does not govern). This is after
    the page asked who is logged in, which namespaces it may see, the runtimes, and listed the jobs.
  * `steps_median_ms`: where a load's time goes: the last script arrived (`scripts_loaded`), the page
    asked who is logged in (`session_asked`), the first list of TrainJobs arrived (`jobs_listed`).
  * each load is either `warm` (the browser's cache holds the page's scripts and stylesheet, as for a
    returning user: they are served `immutable`/`no-cache`) or `cold` (`Network.setCacheDisabled`).
* **baseline** — a static HTML page of the same first-page rows (same eleven columns, generated in Python
  from the same TrainJob objects the API returned), served by `http.server` over HTTPS (the server's own
  certificate) on loopback, loaded the same way: its first paint and its table-ready time (the same
  observer; the rows are in the HTML, so this is parse + layout + paint of a plain table).
* **update_ms** (dashboard only): the page loaded, a MutationObserver on one row's state cell records
  `Date.now()` when it changes; the bench takes `Date.now()` (same machine, same clock) just before a merge
  patch of that job's `spec.suspend` (true, then false: Queued → Suspended → Queued), through the API.
  The delay covers the server's write, its watch event, the page's re-render.

The browser runs without the back/forward cache (see NO_BFCACHE). Runs alternate (dashboard, baseline, ...) so
both sides share the machine's noise; medians over `--runs`.
"""

from __future__ import annotations

import argparse
import html
import json
import ssl
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "dashboard"))
from browser_support import Browsers, missing_tools
from clusters import temp_cluster
from startup import RUNTIME, BenchError
from surfaces import ready_client

NAMESPACE = "default"
TRAINJOBS = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NAMESPACE}/trainjobs"
PAGE_SIZE = 50  # the jobs list's default page (web/src/jobs/JobsList.jsx)
TARGET_READY_MS_100 = 200.0  # the issue's goal: 100 jobs usable within 200 ms
UPDATES_PER_RUN = 2
TIMEOUT_S = 60.0
# Each run leaves the page (for about:blank) and loads it again. With the back/forward cache on, Chromium
# keeps the page it left alive with its watch streams open: after two runs the six HTTP/1.1 connections
# Chromium allows per host are all held by hidden pages' watches, and the next load waits ~60 s for a
# watch to time out (seen here; reported as a dashboard bug). Turned off, each run starts from no open
# stream, as a first visit does.
NO_BFCACHE = ("--disable-features=BackForwardCache",)
COLUMNS = ["Name", "Namespace", "Type", "State", "Progress", "Nodes", "GPUs", "Queue", "Creator", "Created", "Duration"]

# Runs before any script of the page (and is not subject to its CSP): records when the first page of rows is in.
OBSERVER = """
(() => {
  const want = %d;
  window.__ready = null;
  const check = () => {
    if (window.__ready === null && document.querySelectorAll('tr[data-job]').length >= want) {
      window.__ready = performance.now();
      observer.disconnect();
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document, {subtree: true, childList: true});
  document.addEventListener('DOMContentLoaded', check);
})();
"""
# Where the time of a load goes (ms from the navigation's start; null on the static page): the page's
# scripts arrive, it asks who is logged in, and it has the first list of TrainJobs.
STEPS = """
const r = performance.getEntriesByType('resource');
const first = (test) => r.find(e => test(e.name));
const js = r.filter(e => e.name.endsWith('.js'));
const session = first(n => n.endsWith('/dashboard/api/session'));
const list = first(n => /\\/trainjobs(\\?|$)/.test(n) && !n.includes('watch='));
return {scripts_loaded: js.length ? Math.max(...js.map(e => e.responseEnd)) : null,
        session_asked: session ? session.startTime : null, jobs_listed: list ? list.responseEnd : null};
"""
WATCH_CELL = """
const [css, want] = arguments;
window.__changed = null;
const read = () => { const el = document.querySelector(css); return el ? el.textContent.trim() : null; };
const o = new MutationObserver(() => {
  if (window.__changed === null && read() === want) { window.__changed = Date.now(); o.disconnect(); }
});
o.observe(document.body, {subtree: true, childList: true, characterData: true});
"""


def stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1), "max": round(max(values), 1),
            "n": len(values)}


# -- the server and its jobs -------------------------------------------------------------------------------


def seed(http: httpx.Client, first: int, count: int, tag: str) -> None:
    """`count` TrainJobs (2 nodes each; nothing runs them), 8 requests at a time."""

    def one(i: int) -> None:
        obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
               "metadata": {"name": f"bench-{tag}-{i:04d}"},
               "spec": {"runtimeRef": {"name": "mpi-distributed"},
                        "trainer": {"numNodes": 2, "command": ["mpirun", "hostname"]}}}
        r = http.post(TRAINJOBS, json=obj)
        if r.status_code != 201:
            raise BenchError(f"POST TrainJob {i} answered {r.status_code}: {r.text[:500]}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(first, first + count)))


# -- the baseline: a static page of the same rows ------------------------------------------------------------


def human(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60}s"
    if s < 86400:
        return f"{s // 3600}h {(s % 3600) // 60}m"
    return f"{s // 86400}d {(s % 86400) // 3600}h"


def static_page(jobs: list[dict[str, Any]], framework: str) -> str:
    """The first page of the list as the dashboard sorts it (newest first), as one plain HTML table."""
    jobs = sorted(jobs, key=lambda j: (j["metadata"]["creationTimestamp"], j["metadata"]["name"]), reverse=True)
    now = datetime.now(UTC)
    rows = []
    for j in jobs[:PAGE_SIZE]:
        meta = j["metadata"]
        created = datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
        cells = [meta["name"], meta["namespace"], framework, "Queued", "", str(j["spec"]["trainer"]["numNodes"]), "0",
                 (meta.get("labels") or {}).get("kueue.x-k8s.io/queue-name", ""),
                 (meta.get("annotations") or {}).get("mpijob.io/requester", ""),
                 created.strftime("%b %d, %H:%M"), human((now - created).total_seconds())]
        tds = "".join(f"<td>{html.escape(c)}</td>" if i else f'<td><a href="#">{html.escape(c)}</a></td>'
                      for i, c in enumerate(cells))
        rows.append(f'<tr data-job="{html.escape(meta["namespace"])}/{html.escape(meta["name"])}">{tds}</tr>')
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>jobs</title></head><body>"
            f"<h1>Training jobs</h1><table aria-label='Training jobs'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></body></html>")


class StaticSite:
    """`http.server` over HTTPS on loopback (the server's own certificate), serving one directory."""

    def __init__(self, root: Path, cert: Path, key: Path) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


# -- measuring in the browser ----------------------------------------------------------------------------------


def load(driver: Any, url: str, want: int, *, cold: bool) -> dict[str, float]:
    """A full load of `url`: first contentful paint and table-ready, in ms from the navigation's start."""
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": cold})
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER % want})
    try:
        driver.get("about:blank")
        driver.get(url)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            got = driver.execute_script(
                "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');"
                "return [window.__ready, p ? p.startTime : null, performance.getEntriesByType('navigation').length]")
            if got[0] is not None and got[1] is not None:
                steps = driver.execute_script(STEPS)
                return {"fcp": float(got[1]), "ready": float(got[0]),
                        **{k: float(v) for k, v in steps.items() if v is not None}}
            if time.monotonic() > deadline:
                rows = driver.execute_script("return document.querySelectorAll('tr[data-job]').length")
                raise BenchError(f"{url}: {rows} of {want} rows and paint {got[1]} after {TIMEOUT_S:.0f}s")
            time.sleep(0.02)
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})


def update_delay(driver: Any, http: httpx.Client, name: str, suspend: bool) -> float:
    """ms from just before a merge patch of spec.suspend to the row's state cell showing it."""
    css = f'tr[data-job="{NAMESPACE}/{name}"] [data-testid="job-state"]'
    want = "Suspended" if suspend else "Queued"
    driver.execute_script(WATCH_CELL, css, want)
    start = time.time() * 1000
    r = http.patch(f"{TRAINJOBS}/{name}", json={"spec": {"suspend": suspend}},
                   headers={"Content-Type": "application/merge-patch+json"})
    if r.status_code != 200:
        raise BenchError(f"PATCH {name} answered {r.status_code}: {r.text[:300]}")
    deadline = time.monotonic() + 10
    while (changed := driver.execute_script("return window.__changed")) is None:
        if time.monotonic() > deadline:
            raise BenchError(f"the state cell of {name} did not show {want} within 10 s of the patch")
        time.sleep(0.005)
    return float(changed) - start


def measure(driver: Any, http: httpx.Client, dashboard: str, site: StaticSite, size: int, runs: int,
            tmp: Path) -> dict[str, Any]:
    jobs = http.get(TRAINJOBS).json()["items"]
    if len(jobs) != size:
        raise BenchError(f"the server holds {len(jobs)} TrainJobs, expected {size}")
    framework = (http.get(RUNTIME).json()["metadata"].get("labels") or {}).get("trainer.kubeflow.org/framework", "")
    page = f"jobs-{size}.html"
    (tmp / page).write_text(static_page(jobs, framework))
    want = min(size, PAGE_SIZE)
    out: dict[str, Any] = {"jobs": size, "rows_on_first_page": want}
    for mode in ("warm", "cold"):
        ours: dict[str, list[float]] = {"fcp": [], "ready": [], "scripts_loaded": [], "session_asked": [],
                                        "jobs_listed": []}
        base: dict[str, list[float]] = {"fcp": [], "ready": []}
        load(driver, dashboard, want, cold=False)  # prime the cache (and the server) once, not counted
        load(driver, site.url + page, want, cold=False)
        for i in range(runs):
            pair: list[tuple[dict[str, list[float]], str]] = [(ours, dashboard), (base, site.url + page)]
            for side, url in (pair if i % 2 == 0 else pair[::-1]):
                got = load(driver, url, want, cold=mode == "cold")
                for key in side:
                    side[key].append(got[key])
        out[mode] = {
            "dashboard": {"first_contentful_paint_ms": stats(ours["fcp"]), "table_ready_ms": stats(ours["ready"]),
                          "steps_median_ms": {k: round(statistics.median(ours[k]), 1)
                                              for k in ("scripts_loaded", "session_asked", "jobs_listed")}},
            "baseline": {"first_contentful_paint_ms": stats(base["fcp"]), "table_ready_ms": stats(base["ready"])},
            "ratio_table_ready": round(statistics.median(ours["ready"]) / statistics.median(base["ready"]), 2),
            "ratio_first_paint": round(statistics.median(ours["fcp"]) / statistics.median(base["fcp"]), 2),
        }
    driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": False})
    load(driver, dashboard, want, cold=False)
    first = driver.execute_script("return document.querySelector('tr[data-job]').getAttribute('data-job')")
    name = first.split("/", 1)[1]
    delays = []
    for _ in range(runs):
        for suspend in (True, False)[:UPDATES_PER_RUN]:
            delays.append(update_delay(driver, http, name, suspend))
    out["update_ms"] = stats(delays)
    return out


def login(driver: Any, http: httpx.Client, base: str) -> None:
    """The dashboard's own login: a one-time ticket (as `mpijob dashboard` asks for), opened in the browser."""
    r = http.post("/dashboard/api/tickets")
    if r.status_code != 201:
        raise BenchError(f"POST /dashboard/api/tickets answered {r.status_code}: {r.text[:300]}")
    driver.get(base + r.json()["path"])
    deadline = time.monotonic() + TIMEOUT_S
    while not driver.execute_script("return document.querySelector('[data-testid=\"user\"]') !== null"):
        if time.monotonic() > deadline:
            raise BenchError("the dashboard did not log in: "
                             + driver.execute_script("return document.body.innerText")[:300])
        time.sleep(0.05)


def run(runs: int, sizes: list[int]) -> dict[str, Any]:
    problems = missing_tools()
    if problems:
        raise BenchError("missing: " + "; ".join(problems))
    with temp_cluster("mpijob-bench-dashboard-", controllers=False) as (home, info):
        tmp = home.root.parent
        browsers = Browsers(tmp / "chromium")
        site = StaticSite(tmp, home.root / "tls" / "server.crt", home.root / "tls" / "server.key")
        try:
            with ready_client(info.kubeconfig, TIMEOUT_S) as http:
                driver = browsers.new(log_console=False, flags=NO_BFCACHE)
                login(driver, http, info.url.rstrip("/"))
                dashboard = info.url.rstrip("/") + "/dashboard/#/jobs"
                results = []
                have = 0
                tag = uuid.uuid4().hex[:4]
                for size in sizes:
                    t0 = time.perf_counter()
                    seed(http, have, size - have, tag)
                    seeded_s = time.perf_counter() - t0
                    have = size
                    got = measure(driver, http, dashboard, site, size, runs, tmp)
                    got["seed_s"] = round(seeded_s, 1)
                    results.append(got)
        finally:
            site.close()
            browsers.quit_all()
    by_size = {r["jobs"]: r for r in results}
    hundred = by_size.get(100)
    return {
        "runs": runs, "page_size": PAGE_SIZE, "chromium": "headless (Debian /usr/bin/chromium)",
        "sizes": results,
        "target_table_ready_ms_100": TARGET_READY_MS_100,
        "meets_target_warm": None if hundred is None
        else hundred["warm"]["dashboard"]["table_ready_ms"]["median"] <= TARGET_READY_MS_100,
        "meets_target_cold": None if hundred is None
        else hundred["cold"]["dashboard"]["table_ready_ms"]["median"] <= TARGET_READY_MS_100,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each side per size (default 5)")
    parser.add_argument("--sizes", default="100,1000", help="numbers of TrainJobs, ascending (default 100,1000)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"--sizes: {args.sizes!r} is not a list of numbers, e.g. 100,1000", file=sys.stderr)
        return 1
    if args.runs < 1 or not sizes or sizes != sorted(sizes) or sizes[0] < 1:
        print("--runs must be positive and --sizes ascending positive numbers", file=sys.stderr)
        return 1
    try:
        out = run(args.runs, sizes)
    except BenchError as e:
        print(f"bench/dashboard.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
