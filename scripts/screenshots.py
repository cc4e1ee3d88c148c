"""Pictures for the README (`make screenshots`): docs/img/run.png and
ui-{grid,day,day-failed,file}.png (1280 px wide), ui-{grid,day,day-failed}-800.png (800 px).

1. run.png: `dlpipe run --local` for real (its own local stack), its final table recorded by
   rich (ANSI -> SVG) and rendered to PNG by chromium.
2. ui-grid.png, ui-day.png, ui-file.png (and the grid and day at 800 px): a local stack of our own; yesterday's batch run for real (stub
   provider, downloader workers, durable poller), the thirteen days before seeded through the
   real table adapters (finished runs, re-runs, a timed-out day, a failed day whose files
   ended `error`, and a day whose re-run is still going with files in every status); `dlpipe ui`'s app served on 127.0.0.1 and
   photographed by headless chromium.

Needs Debian's chromium and chromium-driver (/usr/bin). Every process it starts is stopped.
Usage: python scripts/screenshots.py [--out docs/img] [--files 12]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from screenshot_seed import seed_history  # beside this script, which Python puts on sys.path
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from dlpipe import metrics
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.local.day import DayOptions, run_day
from dlpipe.local.stack import local_stack
from dlpipe.local.stub.publish import default_day
from dlpipe.log import configure_logging
from dlpipe.ui.app import create_app
from dlpipe.ui.options import UiOptions
from dlpipe.ui.server import BackgroundServer

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--disable-lcd-text",
    "--force-color-profile=srgb",
)  # fmt: skip
WIDTH = 1280
NARROW = 800  # the narrowest window the web view is laid out for


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless chromium through Debian's chromedriver; Selenium Manager never downloads."""
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="dlpipe-shots-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shoot(driver: Any, url: str, path: Path, max_height: int = 1400, width: int = WIDTH) -> None:
    """Load `url` in a window `width` px wide and save the page, up to `max_height` px tall,
    as a PNG."""
    driver.set_window_size(width, 900)
    driver.get(url)
    height = min(
        int(driver.execute_script("return document.documentElement.scrollHeight")), max_height
    )
    driver.set_window_size(width, height + 140)  # the window's frame takes part of its height
    driver.save_screenshot(str(path))
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


def run_table_svg(files: int, day: str) -> str:
    """Run `dlpipe run --local` and turn its coloured stdout (the final table) into an SVG."""
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "118", "TERM": "xterm-256color"}
    command = [
        str(ROOT / ".venv/bin/dlpipe"),
        "run",
        "--local",
        "--files",
        str(files),
        "--date",
        day,
    ]
    done = subprocess.run(  # noqa: S603 (our own console script, fixed argv, no shell)
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        sys.exit(f"dlpipe run --local failed ({done.returncode}):\n{done.stderr[-2000:]}")
    console = Console(record=True, width=118, file=io.StringIO(), force_terminal=True)
    console.print(
        # The command as run: `make run` itself takes no --files or --date.
        Text.from_ansi(f"$ dlpipe run --local --files {files} --date {day}\n")
    )
    console.print(Text.from_ansi(done.stdout.rstrip()))
    return console.export_svg(title="dlpipe run --local")


def svg_to_png(driver: Any, svg: str, path: Path) -> None:
    """Render the SVG in chromium and save it as a PNG of its own size."""
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as page:
        page.write(f"<!doctype html><body style='margin:0;background:#fff'>{svg}</body>")
    try:
        driver.set_window_size(WIDTH, 900)
        driver.get(Path(page.name).as_uri())
        box = driver.execute_script(
            "const r = document.querySelector('svg').getBoundingClientRect(); return [r.width, r.height];"
        )
        driver.set_window_size(WIDTH, int(box[1]) + 140)
        driver.find_element("css selector", "svg").screenshot(str(path))
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
    finally:
        os.unlink(page.name)


def ui_pictures(driver: Any, out: Path, files: int, yesterday: str) -> None:
    """The grid and a day's page of `dlpipe ui` over a local stack with a real and seeded days."""
    configure_logging("WARNING")  # the day's JSON logs and metric lines would bury ours
    metrics.set_sink(lambda _line: None)
    with local_stack() as stack:
        report, _ = run_day(stack, default_day(files), DayOptions(date=yesterday, workers=2))
        print(f"ran {yesterday} for real: batch {report.batch_id} {report.status}")
        busy_day, stuck, failed_day = seed_history(stack.clients, stack.settings, yesterday)
        settings = replace(stack.settings, date_offset_days=1)
        ops = build_ops_context(settings, stack.clients)
        with BackgroundServer(create_app(ops, UiOptions(days=14))) as server:
            day = f"{server.url}day/{busy_day}"
            shoot(driver, server.url, out / "ui-grid.png", max_height=700)
            shoot(driver, day, out / "ui-day.png", max_height=2000)
            # A narrow window: the newest dates and the error column stay in view.
            shoot(driver, server.url, out / "ui-grid-800.png", max_height=700, width=NARROW)
            shoot(driver, day, out / "ui-day-800.png", max_height=1600, width=NARROW)
            # The failed day: its errors by code and each file's error column.
            failed = (
                f"{server.url}day/{failed_day}?feed=default"  # its failed batch, not vendor-b's
            )
            shoot(driver, failed, out / "ui-day-failed.png", max_height=2000)
            shoot(driver, failed, out / "ui-day-failed-800.png", max_height=2000, width=NARROW)
            # the claim whose worker died
            shoot(driver, f"{server.url}file/{stuck}", out / "ui-file.png", max_height=1200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--ui-only", action="store_true", help="Leave run.png as it is.")
    args = parser.parse_args()
    args.out = args.out.resolve()  # a relative --out, as the README runs it
    args.out.mkdir(parents=True, exist_ok=True)
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    svg = None if args.ui_only else run_table_svg(args.files, yesterday)
    with chromium() as driver:
        if svg is not None:
            svg_to_png(driver, svg, args.out / "run.png")
        ui_pictures(driver, args.out, args.files, yesterday)


if __name__ == "__main__":
    main()
