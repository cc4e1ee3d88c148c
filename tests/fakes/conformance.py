"""Each fake as the Protocol it stands in for: `make typecheck` (mypy strict over tests/fakes)
fails here when a fake drifts from its port, before a test passes a fake the service could
not have been given. Never called: the check is the type checker's."""

from __future__ import annotations

from dlpipe.domain.clock import Clock
from dlpipe.domain.listing import FileDescriptor
from dlpipe.services.download.ports import Destination, JobLeases, Source, Upload, UrlSigner
from dlpipe.services.ops.manifest_ports import ManifestReader
from dlpipe.services.orchestrator.announce import EventSender
from dlpipe.services.orchestrator.fanout import FileLister
from dlpipe.services.orchestrator.manifest_ports import ManifestStore
from dlpipe.services.orchestrator.store_ports import BatchStore, DownloadQueues, JobStore, ReadCost
from tests.fakes.download import FakeDestination, FakeSigner, FakeSource, FakeUpload
from tests.fakes.events import FakeEventBus
from tests.fakes.manifests import FakeManifestStore
from tests.fakes.provider import FakeLister
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeMeter, FakeQueue


def _download_ports(clock: Clock, answer: FileDescriptor) -> None:
    destination = FakeDestination()
    leases: JobLeases = FakeJobsTable(clock)
    bucket: Destination = destination
    upload: Upload = FakeUpload(destination, "key")
    source: Source = FakeSource()
    signer: UrlSigner = FakeSigner(answer)
    del leases, bucket, upload, source, signer


def _orchestrator_ports(clock: Clock) -> None:
    jobs: JobStore = FakeJobsTable(clock)
    batches: BatchStore = FakeBatchesTable(clock)
    queue: DownloadQueues = FakeQueue()
    meter: ReadCost = FakeMeter()
    lister: FileLister = FakeLister()
    manifests: ManifestStore = FakeManifestStore()
    events: EventSender = FakeEventBus()
    del jobs, batches, queue, meter, lister, manifests, events


def _ops_ports() -> None:
    reader: ManifestReader = FakeManifestStore()
    del reader
