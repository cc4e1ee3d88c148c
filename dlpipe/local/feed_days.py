"""Several feeds' days at once on one local stack: one stub provider per feed (its own key
pair, token, port and files), one pool of downloader workers for all, one durable execution
per feed, each day verified against the bucket under its feed's prefix."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dlpipe.adapters.feed_parameters import publish_feeds
from dlpipe.adapters.keys import clear_cache as clear_key_cache
from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.bootstrap.orchestrator import build_flow, check_recovery_fits, feed_runs
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, Feed
from dlpipe.domain.redaction import redact
from dlpipe.feed_settings import settings_for_feed
from dlpipe.local.day import (
    DayOptions,
    DayProgress,
    DayReport,
    ProgressWatcher,
    day_report,
    running_workers,
)
from dlpipe.local.durable_runner import (
    LocalRunError,
    enforce_checkpoint_size_limit,
    run_durable_locally,
)
from dlpipe.local.provision import provision_feed_queue
from dlpipe.local.stack import LocalStack
from dlpipe.local.stack_feeds import (
    FeedKeys,
    FeedTables,
    effective_feeds,
    named_feed_keys,
    store_feed_secrets,
)
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.durable import build_durable_handler

RUN_FAILED = "run failed"  # a feed's durable execution failed: no batch status to report


@dataclass(frozen=True)
class LocalFeeds:
    """The feeds to run and each one's secrets; the files each stub publishes every day."""

    tables: FeedTables
    keys: Mapping[str, FeedKeys]
    folder: Path  # the effective feeds file is written here
    files: Sequence[StubFileSpec]
    faults: Mapping[str, Faults] = field(default_factory=dict)  # per feed, for tests
    # A feed's own files instead of `files` (a large feed beside small ones, for tests).
    files_by_feed: Mapping[str, Sequence[StubFileSpec]] = field(default_factory=dict)

    running: tuple[str, ...] | None = None  # whose days run; None: every feed's

    @property
    def names(self) -> list[str]:
        """The feeds whose days run, in the template's order."""
        return [name for name in self.tables if self.running is None or name in self.running]


def local_feeds(
    stack: LocalStack, tables: FeedTables, folder: Path, files: Sequence[StubFileSpec]
) -> LocalFeeds:
    """The default feed with the stack's key and token (in its Secrets Manager), every named
    feed with a fresh key pair and token under `folder/NAME/`."""
    keys = {name: named_feed_keys(folder / name) for name in tables if name != DEFAULT_FEED_NAME}
    if DEFAULT_FEED_NAME in tables:
        keys[DEFAULT_FEED_NAME] = FeedKeys(
            stack.public_key_pem, folder / "unused", stack.provider_token
        )
    return LocalFeeds(tables, keys, folder, files)


@dataclass(frozen=True)
class _Running:
    feeds: dict[str, Feed]
    stubs: dict[str, StubProvider]
    settings: Settings


def run_feed_days(
    stack: LocalStack,
    local: LocalFeeds,
    options: DayOptions,
    on_progress: Callable[[str, DayProgress], None] | None = None,
    days: Sequence[str] | None = None,
) -> list[DayReport]:
    """Every feed's day of `options.date` concurrently, on shared workers; one report per feed,
    in the feeds' order. `days` runs only those feeds' days, the others configured and idle
    (a feed's time alone, as the deployment's workers see it)."""
    if days is not None:
        local = replace(local, running=tuple(days))
    with _serving(stack, local, options) as running:
        tables = build_ops_context(running.settings, stack.clients)
        enforce_checkpoint_size_limit()  # patched once, before the executions' threads start
        with ExitStack() as watchers:
            for name in local.names:
                shown = _bound(on_progress, name)
                watcher = ProgressWatcher(
                    tables.jobs(), tables.batches(), options.date, shown, feed=name
                )
                watchers.enter_context(watcher.watching())
            with (
                running_workers(stack, options.workers, running.settings),
                ThreadPoolExecutor(len(local.names), thread_name_prefix="dlpipe-day") as pool,
            ):
                futures = {
                    name: pool.submit(_run_one, stack, running, name, options)
                    for name in local.names
                }
                results = {name: future.result() for name, future in futures.items()}
        return [_report(stack, running, name, results[name], options.date) for name in local.names]


@contextmanager
def _serving(stack: LocalStack, local: LocalFeeds, options: DayOptions) -> Iterator[_Running]:
    """Each feed's stub started and each named feed written as an SSM parameter in the
    emulator, as Terraform writes it on AWS: every component of the run reads it from there
    (DLPIPE_FEEDS_PARAMETER_PATH). Stubs stopped on exit."""
    with ExitStack() as stubs:
        started = {
            name: stubs.enter_context(_stub(stack, local, name, seed))
            for seed, name in enumerate(local.tables)
        }
        urls = {name: stub.base_url for name, stub in started.items()}
        # The emulator's S3, and the stubs themselves (their file endpoint, when it trickles).
        allowed = (
            urlsplit(stack.emulator.endpoint_url).netloc,
            *sorted({urlsplit(url).netloc for url in urls.values()}),
        )
        secrets = {
            name: store_feed_secrets(stack.clients, name, local.keys[name])
            for name in local.tables
            if name != DEFAULT_FEED_NAME
        }
        queues = {name: provision_feed_queue(stack.clients, name) for name in secrets}
        feeds = effective_feeds(local.tables, secrets, urls, allowed, queues)
        # A process caches a key by its secret; the stack has just given these secrets new
        # values (fresh key pairs every run), which an earlier run in this process must not hide.
        clear_key_cache()
        settings = _day_settings(stack, urls, options)
        _check_polling(settings, feeds)
        if settings.feeds_parameter_path:
            publish_feeds(stack.clients.ssm, settings.feeds_parameter_path, feeds)
        yield _Running(feeds, started, settings)


def _check_polling(settings: Settings, feeds: Mapping[str, Feed]) -> None:
    """A feed whose polling overrides leave no time to recover a crashed worker's file is
    refused now, in one line naming it, not after its execution's retries."""
    for name, feed in feeds.items():
        try:
            check_recovery_fits(settings_for_feed(settings, feed))
        except ConfigError as exc:
            raise ConfigError(f"feeds.{name}: {exc}") from exc


def _stub(stack: LocalStack, local: LocalFeeds, name: str, seed: int) -> StubProvider:
    keys = local.keys[name]
    return StubProvider(
        stack.clients,
        keys.public_key_pem,
        keys.token,
        local.files_by_feed.get(name, local.files),
        seed=seed,  # each feed's plaintext differs: a file published as another's fails its check
        key_prefix="" if name == DEFAULT_FEED_NAME else f"{name}/",  # one stub bucket for all
        faults=local.faults.get(name),
        feed=name,
    )


def _day_settings(stack: LocalStack, urls: Mapping[str, str], options: DayOptions) -> Settings:
    named = [name for name in urls if name != DEFAULT_FEED_NAME]
    return replace(
        stack.settings,
        # As Terraform sets it: only while there are named feeds.
        feeds_parameter_path=stack.provisioned.feeds_parameter_path if named else None,
        provider_base_url=urls.get(DEFAULT_FEED_NAME, stack.settings.provider_base_url),
        poll_interval_seconds=options.poll_interval_seconds,
        max_polls=options.max_polls,
        lease_seconds=options.lease_seconds,
        resend_after_seconds=options.resend_after_seconds,
    )


def _run_one(
    stack: LocalStack, running: _Running, name: str, options: DayOptions
) -> dict[str, Any]:
    """One feed's day as the orchestrator Lambda runs it: the event names a named feed
    (the default feed's names none), and the handler finds the feed's run among the stack's."""
    settings = running.settings
    source = feed_source(settings, stack.clients, env={})  # the Lambda's: the parameters
    runs = feed_runs(settings, source, lambda own: build_flow(own, stack.clients))
    handler = build_durable_handler(
        lambda: build_flow(settings, stack.clients),
        settings.poll_interval_seconds,
        settings.max_polls,
        outage=options.outage,
        runs=runs,
    )
    event: dict[str, Any] = {"date": options.date}
    if name != DEFAULT_FEED_NAME:
        event["feed"] = name
    own = settings_for_feed(settings, running.feeds[name])
    budget_s = own.poll_interval_seconds * own.max_polls + 300.0
    try:
        return run_durable_locally(handler, event, skip_time=False, timeout_seconds=budget_s)
    except LocalRunError as exc:
        # This feed's execution failed as a whole (a bad override, say): its day says so,
        # and the other feeds' days still end and are reported.
        cause = redact(str(exc))[:500]  # masked, then cut
        return {"batch_id": None, "status": RUN_FAILED, "outcome": {"cause": cause}}


def _report(
    stack: LocalStack, running: _Running, name: str, result: dict[str, Any], date: str
) -> DayReport:
    expected = {f: e.sha256 for f, e in running.stubs[name].expected(date).items()}
    prefix = running.feeds[name].destination_prefix
    return day_report(stack, result, expected, feed=name, destination_prefix=prefix)


def _bound(
    on_progress: Callable[[str, DayProgress], None] | None, name: str
) -> Callable[[DayProgress], None] | None:
    if on_progress is None:
        return None
    return lambda progress: on_progress(name, progress)
