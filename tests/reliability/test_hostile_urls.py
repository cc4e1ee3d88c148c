"""Scenario 5b (RELIABILITY.md, production bug 6): the provider lists a URL to a plain-HTTP
server on 127.0.0.1 (the instance-metadata path) and one to an allowed server that redirects
there. Neither server behind a refused URL is contacted, both jobs end `error` url_refused,
the rest of the day completes, and the nothing-lost invariant holds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest

from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import DownloadService
from tests.integration.test_url_refusals import Recorder
from tests.provider_support import StubFactory
from tests.reliability.rig import Rig, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
METADATA_PATH = "/latest/meta-data/iam/security-credentials/dlpipe-role"


def test_listed_urls_to_internal_servers_are_never_fetched(
    rig: Rig, stub_factory: StubFactory, figures: Any
) -> None:
    """Direct and redirected metadata-style URLs: zero requests reach them; jobs error; day ends."""
    entity, day = unique_entity(), unique_day()
    good, direct, redirected = (f"{entity}{n}" for n in ("g", "d", "r"))
    with Recorder().running() as metadata:
        target = f"{metadata.origin}{METADATA_PATH}"
        with Recorder(status=302, headers={"Location": target}).running() as redirector:
            faults = Faults(
                malformed_fields={
                    direct: {"url": f"{target}?X-Amz-Signature=abc"},
                    redirected: {"url": f"{redirector.origin}/bucket/key?X-Amz-Signature=abc"},
                }
            )
            specs = [StubFileSpec(e, 2000, CIPHER_GCM) for e in (good, direct, redirected)]
            stub = stub_factory(specs, faults=faults)
            emulator = urlsplit(rig.clients.s3.meta.endpoint_url).netloc
            # The local stack's allowlist (the emulator) plus the redirecting server; not the
            # metadata server: what AWS's default allowlist would never name either.
            policy = UrlPolicy.from_patterns(
                [emulator, f"127.0.0.1:{redirector.port}"], allow_http=True, allow_private=True
            )
            base = rig.service(stub, lease_seconds=30)
            service = DownloadService(replace(base.deps, url_policy=policy))
            with rig.thread_workers([service]):
                result = rig.run_day(rig.flow(stub), day, polls=60)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    messages = {f: j.error_message for f, j in facts.jobs.items() if j.error_message}
    figures(status=result["status"], errors=messages, metadata_requests=len(metadata.paths))
    assert metadata.paths == [], f"the metadata server was contacted: {metadata.paths}"
    assert len(redirector.paths) == 1
    assert facts.by_status(JobStatus.COMPLETED) == {f"{good}-{day}"}
    assert messages == {
        f"{direct}-{day}": "url_refused: the host is not in the allowlist"
        f" (host 127.0.0.1:{metadata.port})",
        f"{redirected}-{day}": "url_refused: the host is not in the allowlist"
        f" (host 127.0.0.1:{metadata.port})",
    }
    assert result["status"] == "failed"
