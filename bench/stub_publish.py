"""How long the stub provider takes to publish a day (encrypt and upload every file to moto).

    python bench/stub_publish.py [--files 20] [--repeat 3]

`default_day(N)` (0 B .. 20 MiB, CBC and GCM alternating), published N times in a row on one
emulator, each run under a fresh key prefix; prints the seconds of each run and the best.
No target: it is the fixed cost in front of every local day and benchmark.
"""

from __future__ import annotations

import argparse
import uuid

from common import MIB, machine, quiet_logs, timed

from dlpipe.local.stack import local_stack
from dlpipe.local.stub.publish import default_day
from dlpipe.local.stub.server import StubProvider

DAY = "2026-02-28"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20, help="files of default_day")
    parser.add_argument("--repeat", type=int, default=3, help="publishes (the best is kept)")
    args = parser.parse_args()
    quiet_logs()
    specs = default_day(args.files)
    mib = sum(spec.size for spec in specs) / MIB
    info = machine()
    print(f"stub publish: {info['cores']} cores, load {info['load_average']}, moto {info['moto']}")
    runs: list[float] = []
    with local_stack() as stack:
        for _ in range(args.repeat):
            prefix = f"{uuid.uuid4().hex[:12]}/"
            with StubProvider(
                stack.clients, stack.public_key_pem, stack.provider_token, specs, key_prefix=prefix
            ) as stub:
                seconds, _ = timed(lambda stub=stub: stub.publish(DAY))
                runs.append(seconds)
                stub.purge()
    print(
        f"default_day({args.files}): {mib:.1f} MiB published in "
        + ", ".join(f"{s:.2f}" for s in runs)
        + f" s (best {min(runs):.2f} s, {mib / min(runs):.1f} MiB/s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
