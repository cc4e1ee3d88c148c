"""Fixtures of the web view's tests: the ops world (emulator tables, far-past clock, Scan guard),
a seeded day, `dlpipe ui`'s app served by waitress in a thread, and Debian's chromium."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlpipe.ui.app import create_app
from dlpipe.ui.options import UiOptions
from dlpipe.ui.server import BackgroundServer
from tests.integration import test_ops_fixtures
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import SeededDay, seed_day

# The ops tests' world (private queues, far-past clock, Scan guard, cleanup), shared as is.
world = test_ops_fixtures.world
no_scan = test_ops_fixtures.no_scan

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REFRESH_SECONDS = 0.5
# Without the background-networking switches chromium calls home, which this network refuses.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


@pytest.fixture
def seeded(world: World) -> SeededDay:
    """The ops world with finished batches before its day and a running re-run on it."""
    return seed_day(world)


@pytest.fixture
def ui_url(world: World, seeded: SeededDay) -> Iterator[str]:
    """`dlpipe ui`'s application over the world's OpsContext, on a free port of 127.0.0.1."""
    app = create_app(world.ops, UiOptions(refresh_seconds=REFRESH_SECONDS))
    with BackgroundServer(app) as server:
        yield server.url.rstrip("/")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless chromium through Debian's chromedriver (never Selenium Manager's downloads);
    skipped when either is missing. Quit (driver and browser stopped) at the module's end."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager, were it asked, must not download
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="dlpipe-ui-chromium-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(str(CHROMEDRIVER), port=_free_port())
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
