"""A real JupyterLab server and a real Chromium, for tests that see what a learner sees."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from nbtools import NOTEBOOK_DIR, ROOT

ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--disable-dev-shm-usage"]
LAB_SETTINGS = {  # quiet, fully rendered notebooks: every cell stays in the page
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


def chromium_path() -> str:
    """Debian's Chromium (or $CHROMIUM); fails with install instructions when it is missing."""
    for candidate in (os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium",
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("Chromium not found: the browser tests need it. Install it with "
                "`sudo apt-get install -y chromium` (Debian/Ubuntu), or set CHROMIUM=/path/to/chromium.",
                pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path, tmp: Path):
        self.root, self.port, self.token = root, _free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        settings = tmp / "lab-settings"
        for name, value in LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings),
               "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp / "config")}
        self.log = open(tmp / "jupyter.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
             f"--port={self.port}", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=False",
             "--LabApp.news_url=", "--ServerApp.open_browser=False", "--allow-root"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: see {self.log.name}")
            try:
                urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2)
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not start in {timeout} s: see {self.log.name}")

    def url(self, path: str) -> str:
        return f"{self.base}/{path}?token={self.token}"

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


@pytest.fixture(scope="session")
def notebook_copy(tmp_path_factory) -> Path:
    """A temporary copy of the notebooks: the repository is never modified."""
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(NOTEBOOK_DIR, root / "notebooks")
    return root / "notebooks"


@pytest.fixture(scope="session")
def server(notebook_copy, tmp_path_factory):
    srv = Server(notebook_copy, tmp_path_factory.mktemp("jupyter"))
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"{request.node.name}.png"
        try:
            pg.screenshot(path=str(shot), full_page=True)
            print(f"\nscreenshot of the failure: {shot}")
        except Exception as e:  # the page may be gone
            print(f"\nno screenshot ({e})")
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
