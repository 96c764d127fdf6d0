"""Helpers for the dashboard's browser tests and bench/dashboard.py (imported by name: tests have no
packages, so this name is unique in tests/).

A real headless Chromium (Debian's `/usr/bin/chromium`) driven by Selenium through Debian's
`/usr/bin/chromedriver`: Selenium Manager never runs (`SE_OFFLINE=1`, both paths given), so nothing is
downloaded. Each browser gets a fresh profile directory. The server's certificate is signed by a CA that
each test server makes for itself in its own `MPIJOB_HOME` (so a profile would have to be taught a new CA
per server, which Chromium on Linux only does through an NSS database): the browser is told to accept
any certificate instead (`acceptInsecureCerts`). Nothing else in the tests depends on that: the pages'
security (cookie flags, CSP, CSRF) is asserted on their own, and the httpx checks verify the real CA.

Waiting is always a poll against a deadline; a deadline that passes fails with what was last seen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

import support
from support import trainjob

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DIST_ENV = "MPIJOB_DASHBOARD_DIR"  # the server serves the page from there when set (routes/dashboard.py), and so
DIST = Path(os.environ.get(DIST_ENV) or REPO / "web" / "dist")  # do the tests' checks
AXE = REPO / "web" / "node_modules" / "axe-core" / "axe.min.js"
MPIJOB = REPO / ".venv" / "bin" / "mpijob"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000", "--disable-dev-shm-usage")
T = TypeVar("T")


class MissingTool(Exception):
    """Something the browser tests need is not on this machine (said how to get it)."""


def missing_tools() -> list[str]:
    """What is missing, each with how to get it: the tests fail (never skip) with this list."""
    out = []
    if not Path(CHROMIUM).is_file():
        out.append(f"{CHROMIUM} (Debian package chromium: `make test` installs it)")
    if not Path(CHROMEDRIVER).is_file():
        out.append(f"{CHROMEDRIVER} (Debian package chromium-driver: `make test` installs it)")
    if not (DIST / "index.html").is_file():
        out.append(f"{DIST / 'index.html'} (the built dashboard: run `make dashboard`, or set {DIST_ENV} to a built one)")
    if not AXE.is_file():
        out.append(f"{AXE} (axe-core, a devDependency of web/: `cd web && npm ci`)")
    return out


def wait_for(probe: Callable[[], T], what: str, timeout: float = 20, interval: float = 0.05) -> T:
    """`support.wait_for`, where a list re-rendered under the probe means "look again"."""
    return support.wait_for(probe, what, timeout, interval, ignore=(StaleElementReferenceException,))


# -- the browser ---------------------------------------------------------------------------------------


def chrome(profile: Path, *, log_console: bool = True, flags: Iterable[str] = ()) -> webdriver.Chrome:
    """A headless Chromium with a fresh profile in `profile`, its console kept for `browser_log`."""
    os.environ["SE_OFFLINE"] = "1"  # Selenium Manager must not look anything up, let alone download it
    problems = missing_tools()
    if problems:
        raise MissingTool("the dashboard's browser tests need: " + "; ".join(problems))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    for flag in flags:
        options.add_argument(flag)
    options.accept_insecure_certs = True  # each test server has its own CA: see the module's doc
    if log_console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "OFF"})
    service = Service(executable_path=CHROMEDRIVER, log_output=subprocess.DEVNULL)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    return driver


class Console:
    """Every message the page's console printed, drained from the browser as tests go (each read of
    WebDriver's log empties it), each with the page it was seen on."""

    HARMLESS: tuple[str, ...] = ()

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver
        self.entries: list[dict[str, Any]] = []

    def drain(self) -> list[dict[str, Any]]:
        try:
            got = self.driver.get_log("browser")
        except WebDriverException:
            return []
        url = self.driver.current_url
        for e in got:
            e["page"] = url
        self.entries.extend(got)
        return got

    def csp_violations(self) -> list[dict[str, Any]]:
        self.drain()
        return [e for e in self.entries if "Content Security Policy" in e.get("message", "")
                or "Content-Security-Policy" in e.get("message", "")]

    def severe(self, allowed: Iterable[str] = ()) -> list[dict[str, Any]]:
        """SEVERE messages but for those matching one of the `allowed` regexes."""
        self.drain()
        patterns = [re.compile(p) for p in allowed]
        return [e for e in self.entries if e.get("level") == "SEVERE"
                and not any(p.search(e.get("message", "")) for p in patterns)]

    def forget(self) -> None:
        self.drain()
        self.entries.clear()


def describe(entries: list[dict[str, Any]]) -> str:
    return "\n".join(f"  [{e.get('level')}] on {e.get('page')}: {e.get('message')}" for e in entries)


class Dashboard:
    """One browser on one server's dashboard: navigation, waits, screenshots, axe, the console."""

    def __init__(self, driver: webdriver.Chrome, base: str, shots: Path | None = None) -> None:
        self.driver = driver
        self.base = base.rstrip("/") + "/dashboard/"
        self.shots = shots
        self.console = Console(driver)
        self.shot_count = 0

    # navigation and lookup

    def go(self, route: str) -> None:
        """Navigate inside the page (hash route `#/...`) without reloading it."""
        self.driver.execute_script("window.location.hash = arguments[0]", route.lstrip("#"))

    def load(self, route: str = "") -> None:
        """A full load of the page at `route` (a new document)."""
        self.driver.get(self.base + (f"#{route.lstrip('#')}" if route else ""))

    def find(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def one(self, css: str, timeout: float = 20, visible: bool = False) -> WebElement:
        def probe() -> WebElement | None:
            for el in self.find(css):
                if not visible or el.is_displayed():
                    return el
            return None

        return wait_for(probe, f"an element {css!r} on {self.driver.current_url}", timeout)

    def settled(self, what: str, timeout: float = 20) -> None:
        """The page shows its heading and no spinner (every Spinner is labelled "Loading ...")."""
        try:
            loading = 'main [aria-label^="Loading"], [role="progressbar"][aria-label^="Loading"]'
            wait_for(lambda: self.find("main h1") and not self.find(loading),
                     f"{what} to finish loading", timeout)
        except AssertionError as e:
            body = self.js("return document.body ? document.body.innerText : ''")
            raise AssertionError(f"{e}\nthe page at {self.driver.current_url} shows: {body[:600]!r}\nconsole:\n"
                                 + describe(self.console.drain())) from None

    def gone(self, css: str, timeout: float = 20) -> None:
        wait_for(lambda: not self.find(css), f"no element {css!r} on {self.driver.current_url}", timeout)

    def text_of(self, css: str, timeout: float = 20) -> str:
        return self.one(css, timeout).text

    def wait_text(self, css: str, want: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        def probe() -> str | None:
            for el in self.find(css):
                t = el.text
                if want(t):
                    return t or " "
            return None

        return wait_for(probe, f"{what} (in {css!r})", timeout)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def button(self, label: str, timeout: float = 20) -> WebElement:
        """A button (or link made a button) whose visible text or aria-label is exactly `label`."""

        def probe() -> WebElement | None:
            for el in self.find("button, a[role=button], [role=tab], a.pf-v6-c-button"):
                try:
                    if (el.text.strip() == label or el.get_attribute("aria-label") == label) and el.is_displayed():
                        return el
                except StaleElementReferenceException:
                    continue
            return None

        return wait_for(probe, f"a button {label!r} on {self.driver.current_url}", timeout)

    def buttons(self) -> list[str]:
        """The visible text or aria-label of every visible button on the page."""
        out = []
        for el in self.find("button, a[role=button]"):
            try:
                if el.is_displayed():
                    out.append(el.text.strip() or el.get_attribute("aria-label") or "")
            except StaleElementReferenceException:
                continue
        return out

    def field(self, label: str, timeout: float = 20) -> WebElement:
        """The form control labelled `label` (its <label for>, the required marker aside), else the one
        whose aria-label is `label`."""

        def probe() -> WebElement | None:
            found = self.js(
                """
                const want = arguments[0];
                for (const l of document.querySelectorAll('label[for]')) {
                  const text = l.textContent.replace(/[*\\s]+$/, '').trim();
                  const el = document.getElementById(l.htmlFor);
                  if (text === want && el) return el;
                }
                return document.querySelector(`[aria-label="${want}"]`);
                """, label)
            return found if isinstance(found, WebElement) else None

        return wait_for(probe, f"a form field labelled {label!r} on {self.driver.current_url}", timeout)

    def type_into(self, el: WebElement, text: str) -> None:
        """Replace what a (React-controlled) input holds with `text`, as a user would: select all, type."""
        el.click()
        el.send_keys(Keys.CONTROL, "a")
        el.send_keys(Keys.BACKSPACE)
        if text:
            el.send_keys(text)

    def mark_no_reload(self) -> None:
        """A marker in the current document: gone if the page reloads (see `reloaded`)."""
        self.js("window.__noReload = 1")

    def reloaded(self) -> bool:
        return not (self.js("return window.__noReload === 1 && performance.getEntriesByType('navigation').length === 1"))

    # evidence

    def screenshot(self, name: str) -> Path | None:
        if self.shots is None:
            return None
        self.shots.mkdir(parents=True, exist_ok=True)
        self.shot_count += 1
        path = self.shots / f"{self.shot_count:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def axe(self, what: str, context: str | None = None) -> list[dict[str, Any]]:
        """Run axe-core in the page (injected by WebDriver, which the page's CSP does not govern) and
        return its violations of impact serious or critical, each {id, impact, help, nodes}."""
        if not self.js("return typeof window.axe === 'object' && typeof window.axe.run === 'function'"):
            self.js(AXE.read_text())
        if not self.js("return typeof window.axe === 'object'"):
            raise AssertionError("axe-core did not load into the page")
        result = self.driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            const ctx = arguments[0] ? document.querySelector(arguments[0]) : document;
            window.axe.run(ctx, {resultTypes: ['violations']})
              .then(r => done(JSON.stringify(r.violations.map(v => ({
                  id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.map(n => ({target: n.target, html: n.html.slice(0, 200),
                                            summary: (n.failureSummary || '').slice(0, 300)}))})))))
              .catch(e => done(JSON.stringify({error: String(e)})));
            """, context)
        found = json.loads(result)
        if isinstance(found, dict):
            raise AssertionError(f"axe.run failed on {what}: {found['error']}")
        return [v for v in found if v.get("impact") in ("serious", "critical")]


def axe_report(violations: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for page, found in violations.items():
        for v in found:
            lines.append(f"{page}: {v['id']} ({v['impact']}): {v['help']}")
            for n in v["nodes"][:8]:
                lines.append(f"    {n['target']}: {n['html']}\n      {n['summary']}")
    return "\n".join(lines)


# -- logging in ------------------------------------------------------------------------------------------


def login_link(home: Path, kubeconfig: Path) -> str:
    """`mpijob dashboard --print-url`, the real CLI, as the kubeconfig's user: the one-time link."""
    env = {**os.environ, "MPIJOB_HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    proc = subprocess.run([str(MPIJOB), "dashboard", "--print-url"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, f"mpijob dashboard --print-url failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
    url = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+/dashboard/#login=[A-Za-z0-9_-]{20,}", url), url
    return url


def log_in(dash: Dashboard, home: Path, kubeconfig: Path, user: str | None = None, timeout: float = 30) -> str:
    """Open a fresh login link in `dash` and wait for the logged-in shell (the user in the masthead)."""
    url = login_link(home, kubeconfig)
    dash.driver.get("about:blank")  # a new document, as a link opened from a terminal is (see the security tests)
    dash.driver.get(url)
    try:
        shown = dash.wait_text('[data-testid="user"]', lambda t: bool(t.strip()), "the logged-in user in the masthead",
                               timeout)
    except AssertionError as e:
        body = dash.js("return document.body ? document.body.innerText : ''")
        raise AssertionError(f"{e}\nthe page at {dash.driver.current_url} shows: {body[:500]!r}\nconsole:\n"
                             + describe(dash.console.drain())) from None
    if user is not None:
        assert shown.strip() == user, f"the masthead shows user {shown!r}, expected {user!r}"
    return url


class Browsers:
    """Browsers with fresh profiles under one temp dir, all quit at the end."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mpijob-chromium-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.drivers: list[webdriver.Chrome] = []

    def new(self, **kw: Any) -> webdriver.Chrome:
        profile = Path(tempfile.mkdtemp(prefix="profile-", dir=self.root))
        d = chrome(profile, **kw)
        self.drivers.append(d)
        return d

    def quit_all(self) -> None:
        for d in self.drivers:
            try:
                d.quit()
            except Exception:  # noqa: BLE001 - a browser that died already is gone anyway
                pass
        self.drivers.clear()
        shutil.rmtree(self.root, ignore_errors=True)


# -- jobs through the API ---------------------------------------------------------------------------------

# Every rank says who it is, then works a little: long enough to be seen Running.
RANKS_SAY = 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE says hello"; sleep {seconds}'


def ranks_job(name: str, seconds: float = 3, nodes: int = 2) -> dict[str, Any]:
    return trainjob(name, ["mpirun", "bash", "-c", RANKS_SAY.format(seconds=seconds)], num_nodes=nodes)


# The states the page may show, in the words of the contract (web/src/model.js).
STATES = ("Queued", "Starting", "Running", "Suspended", "Succeeded", "Failed")

# A MutationObserver that records, with Date.now(), every text the first element matching a selector
# takes (window.__seen[key] = [[ms, text], ...]); re-attaches when React replaces the element.
WATCH_TEXT = """
const [key, css] = arguments;
window.__seen = window.__seen || {};
const seen = window.__seen[key] = [];
const read = () => { const el = document.querySelector(css); return el ? el.textContent.trim() : null; };
let last = read();
seen.push([Date.now(), last]);
const observer = new MutationObserver(() => {
  const now = read();
  if (now !== last) { last = now; seen.push([Date.now(), now]); }
});
observer.observe(document.body, {subtree: true, childList: true, characterData: true});
(window.__observers = window.__observers || []).push(observer);
"""


def watch_text(dash: Dashboard, key: str, css: str) -> None:
    dash.js(WATCH_TEXT, key, css)


def seen_texts(dash: Dashboard, key: str) -> list[tuple[int, str | None]]:
    return [(int(ms), t) for ms, t in dash.js("return (window.__seen || {})[arguments[0]] || []", key)]
