"""Peak memory and speed of a process that streams a large provider listing.

    python bench/listing_memory.py [--sizes 10000,100000] [--pages 0,1000] [--whole]

Starts the emulator (moto, for the stub's bucket and presigning endpoint) and one stub
provider per size, serving synthetic listing-only entries (dlpipe/local/stub/listing.py: really
presigned URLs of objects never stored, one real RSA-OAEP wrapped key, ~1.1 KB an entry).
For each size and page size (0 = one unpaged answer) a child process builds the real
ProviderClient and iterates `iter_listing` without keeping entries. The child reports its
RSS and kernel high-water mark (VmHWM, /proc/self/status) after its imports and before the
listing, then VmHWM after it, the wall time and entries/s; `growth` is VmHWM after minus
RSS before. The ijson backend the child used is printed (yajl2_c unless forced with
DLPIPE_IJSON_BACKEND=python). `--whole` adds, for comparison, the previous client's way:
the whole answer read, json.loads'ed and every entry validated into a list.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

MIB = 1024 * 1024
DAY = "2026-02-28"
TOKEN = "bench-listing-token"


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(url: str, *, whole: bool) -> None:
    """Stream the listing at `url` through the real client; print one JSON line of figures.

    `whole`: the previous client's way instead, for comparison: read the whole answer, then
    json.loads it and validate every entry into a list (its 32 MiB cap left out).
    """
    import requests  # noqa: PLC0415 - measured after imports

    from dlpipe.adapters.listing_stream import BACKEND_NAME  # noqa: PLC0415
    from dlpipe.adapters.provider_client import ProviderClient  # noqa: PLC0415
    from dlpipe.domain.descriptor import parse_file  # noqa: PLC0415

    client = ProviderClient(url, TOKEN, allow_http=True, allow_private=True)  # the local stub
    rss_before, hwm_before = _status_kib("VmRSS"), _status_kib("VmHWM")
    started = time.monotonic()
    entries = rejected = 0
    if whole:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        body = requests.get(f"{url}/v1/files", params={"date": DAY}, headers=headers, timeout=60)
        kept = [parse_file(item, DAY, "files[i]") for item in json.loads(body.content)["files"]]
        entries = len(kept)
    else:
        for entry in client.iter_listing(DAY):
            entries += 1
            rejected += not hasattr(entry, "url")
    wall = time.monotonic() - started
    hwm_after = _status_kib("VmHWM")
    print(
        json.dumps(
            {
                "entries": entries,
                "rejected": rejected,
                "wall_s": round(wall, 2),
                "entries_per_s": round(entries / wall),
                "rss_before_mib": round(rss_before / 1024, 1),
                "hwm_before_mib": round(hwm_before / 1024, 1),
                "hwm_after_mib": round(hwm_after / 1024, 1),
                "growth_mib": round((hwm_after - rss_before) / 1024, 1),
                "backend": "json.loads, whole answer" if whole else BACKEND_NAME,
            }
        )
    )


def main() -> None:
    """Start the emulator and stubs, run one child per (size, page size), print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="run", choices=["run", "child"])
    parser.add_argument("--url")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--pages", default="0,1000", help="page sizes; 0 = unpaged")
    parser.add_argument(
        "--whole", action="store_true", help="also run the previous whole-answer parse, unpaged"
    )
    args = parser.parse_args()
    if args.mode == "child":
        child(args.url, whole=args.whole)
        return
    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.config import Settings  # noqa: PLC0415
    from dlpipe.local.emulator import Emulator, local_environment  # noqa: PLC0415
    from dlpipe.local.stub.crypto import generate_rsa_keypair  # noqa: PLC0415
    from dlpipe.local.stub.server import StubProvider  # noqa: PLC0415
    from dlpipe.log import configure_logging  # noqa: PLC0415

    configure_logging("WARNING")
    sizes = [int(s) for s in args.sizes.split(",")]
    page_sizes = [int(p) for p in args.pages.split(",")]
    _private, public_pem = generate_rsa_keypair()
    rows = []
    with Emulator() as emulator:
        env = {
            **os.environ,
            **local_environment(emulator.endpoint_url),
            "DLPIPE_LOG_LEVEL": "WARNING",
        }
        os.environ.update(env)
        clients = AwsClients(Settings.from_env())
        for size in sizes:
            with StubProvider(clients, public_pem, TOKEN, [], synthetic_files=size) as stub:
                runs = [(p, False) for p in page_sizes] + ([(0, True)] if args.whole else [])
                for page_size, whole in runs:
                    stub.page_size = page_size or None
                    out = subprocess.run(
                        [sys.executable, __file__, "child", "--url", stub.base_url,
                         *(["--whole"] if whole else [])],
                        env=env, capture_output=True, text=True, check=True, timeout=300,
                    )  # fmt: skip
                    figures = json.loads(out.stdout.strip().splitlines()[-1])
                    label = "whole answer" if whole else (page_size or "unpaged")
                    rows.append({"files": size, "page_size": label, **figures})
                    print(json.dumps(rows[-1]), flush=True)
    print()
    print(
        "| files | pages of | wall s | entries/s | RSS before MiB | VmHWM after MiB | growth MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['files']:,} | {r['page_size']} | {r['wall_s']} | {r['entries_per_s']:,} |"
            f" {r['rss_before_mib']} | {r['hwm_after_mib']} | {r['growth_mib']} |"
        )
    print(f"ijson backend: {rows[0]['backend'] if rows else '?'}")


if __name__ == "__main__":
    main()
