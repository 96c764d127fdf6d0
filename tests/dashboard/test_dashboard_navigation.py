"""Leaving the dashboard and coming back, as a user does with the browser's own navigation, never leaves
the page stuck: the jobs list is there again within seconds every time.

The server speaks HTTP/1.1, where Chromium opens at most six connections per host, and the page holds
one per watch it follows (the jobs, the runtimes, ...). A page that goes into the back/forward cache
with its watches open keeps those connections; after two such visits the next load of the dashboard
waits for a free connection until a watch times out on the server (about a minute). This test has its
own browser: once stuck, a browser stays stuck for that minute.
"""

from __future__ import annotations

import time
from typing import Any

from browser_support import Dashboard, log_in

LOADS = 4
WITHIN_S = 10.0


def test_leaving_and_coming_back_never_stalls_the_page(new_dashboard: Any, server: Any,
                                                        finished_job: dict[str, Any]) -> None:
    name = finished_job["metadata"]["name"]
    dash: Dashboard = new_dashboard("navigation")
    log_in(dash, server.home, server.kubeconfig)
    took = []
    for i in range(LOADS):
        dash.driver.get("data:text/html,<title>elsewhere</title><p>another site")  # leave the dashboard
        start = time.monotonic()
        dash.driver.get(dash.base + "#/jobs")
        dash.one(f'tr[data-job="default/{name}"]', timeout=WITHIN_S + 5)
        took.append(round(time.monotonic() - start, 2))
        assert took[-1] < WITHIN_S, f"load {i + 1} of the jobs list took {took[-1]} s (each load, s: {took})"
    # and back/forward themselves: the page restored from the cache (or reloaded) is live, not frozen
    dash.driver.back()
    dash.driver.forward()
    dash.one(f'tr[data-job="default/{name}"]', timeout=WITHIN_S)
