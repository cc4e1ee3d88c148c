"""What every operator use case runs against: settings, stores, queues and a clock, handed in
by `dlpipe.bootstrap.ops` (tests build theirs through it, with overrides)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dlpipe.config import ConfigError, Settings
from dlpipe.domain.clock import Clock
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.feed_settings import settings_for_feed
from dlpipe.services.ops.manifest_ports import ManifestReader
from dlpipe.services.ops.ports import MessagePeeker, OpsBatches, OpsJobs, QueueGauge, Starter
from dlpipe.services.shared_ports import JobSender

# AWS short polls sample a subset of SQS servers; one second of long poll sees them all.
RECEIVE_WAIT_SECONDS = 1


@dataclass
class OpsContext:
    """The dependencies of the ops commands; `dlpipe.bootstrap.ops` builds it.

    What needs a setting that may be unset (the download queue, the orchestrator's ARN) is
    handed in as a function of the settings, so only the command that uses it fails
    (ConfigError) without it.
    """

    settings: Settings
    clock: Clock
    job_store: OpsJobs
    batch_store: OpsBatches
    download_queues: Callable[[Settings], JobSender]  # ConfigError without DLPIPE_QUEUE_URL
    gauge: Callable[[str], QueueGauge]  # the depth of the queue at a URL
    messages: Callable[[], MessagePeeker]  # looks at the DLQ's messages without consuming them
    orchestrator: Callable[[Settings], Starter]  # ConfigError without DLPIPE_ORCHESTRATOR_ARN
    starter: Starter | None = None  # backfill's poller starter; None: the orchestrator Lambda
    # The day manifests in the destination bucket (ConfigError without DLPIPE_DEST_BUCKET).
    manifest_reader: Callable[[Settings], ManifestReader] | None = None
    receive_wait_seconds: int = RECEIVE_WAIT_SECONDS
    # The configured feeds (the feeds file; without one, the default feed alone): which
    # feeds a day's screen lists besides those its batches name, and their deadlines.
    feeds: Mapping[str, Feed] = field(default_factory=lambda: {DEFAULT_FEED.name: DEFAULT_FEED})

    def now_ms(self) -> int:
        """The current time in epoch milliseconds."""
        return self.clock.now_ms()

    def jobs(self) -> OpsJobs:
        """The jobs table."""
        return self.job_store

    def batches(self) -> OpsBatches:
        """The batches table."""
        return self.batch_store

    def queue(self, feed: str = DEFAULT_FEED.name) -> JobSender:
        """Feed `feed`'s download queues, routed by size: its own queue when it has one, else
        the deployment's (ConfigError if DLPIPE_QUEUE_URL is unset)."""
        known = self.feeds.get(feed)
        return self.download_queues(
            self.settings if known is None else settings_for_feed(self.settings, known)
        )

    def poller_starter(self) -> Starter:
        """Backfill's starter: the one handed in, else the orchestrator Lambda (ConfigError
        if DLPIPE_ORCHESTRATOR_ARN is unset)."""
        return self.starter or self.orchestrator(self.settings)

    def manifests(self) -> ManifestReader:
        """The day manifests' reader (ConfigError if none is wired or the bucket is unset)."""
        if self.manifest_reader is None:
            raise ConfigError("no destination bucket reader is wired for the manifests")
        return self.manifest_reader(self.settings)
