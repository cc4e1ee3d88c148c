"""How long a long-poll worker's received message stays hidden before a claim takes it.

A message is received hidden for the receive window only (RECEIVE_WINDOW_S, or lease + margin
when that is shorter), and kept hidden in steps of that window, renewed every third of it,
while it waits: for a thread (dlpipe.entrypoints.lanes), or, taken by a thread, for its job's
claim (`UnclaimedMessages` here). Once the service sets its visibility (the heartbeat's lease +
margin as the claim starts, a hand-back, a delay), the service owns it and nothing here touches
it again. So the messages a killed or frozen worker received, and had not claimed, are back
within the window, not after lease + margin; nor is one whose handling raised held longer.

Why 30 s, renewed every 10 s: a lane that holds a message waiting does not long-poll
(domain/lanes.py's `may_receive`), so its thread renews on a TICK_S (0.5 s) tick; a taken
message is renewed by this module's own tick. A renewal is then due with at least
30 - 10 - 0.5 = 19.5 s of the window left, room for a slow ChangeMessageVisibility and its
retries. A shorter window costs more renewals per waiting message; a longer one delays what a
dead worker held. The Lambda's messages keep the queue's visibility (its event source receives).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dlpipe.adapters.download_queue import MessageVisibility, Received
from dlpipe.entrypoints.dispatch import receive_visibility_s
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService

log = get_logger()
RECEIVE_WINDOW_S = 30
TICK_S = 0.5


def receive_window_s(service: DownloadService) -> int:
    """The window: RECEIVE_WINDOW_S, or lease + margin when that is shorter (never longer than
    a claimed message is hidden)."""
    return min(RECEIVE_WINDOW_S, receive_visibility_s(service))


def renew_every_s(window_s: int) -> float:
    """How often a message hidden for `window_s` is renewed: a third of it."""
    return window_s / 3


@dataclass
class _Watched:
    visibility: MessageVisibility
    extended_at: float
    owned: bool = False  # the service has set the visibility: never renewed here again
    lock: threading.Lock = field(default_factory=threading.Lock)


class ClaimVisibility:
    """A taken message's visibility as the service sees it: its first use ends the renewals
    (under the message's lock, so a renewal to the short window never lands after it)."""

    def __init__(self, watched: _Watched) -> None:
        self._watched = watched

    def __call__(self, seconds: int) -> None:
        """Hide the message for `seconds` from now; the service owns its visibility now."""
        with self._watched.lock:
            self._watched.owned = True
            self._watched.visibility(seconds)

    def send_copy_later(self, body: str, delay_s: int, size_bytes: int | None = None) -> bool:
        """Queue a delayed copy (the message is then deleted: renewals stop)."""
        with self._watched.lock:
            self._watched.owned = True
        return self._watched.visibility.send_copy_later(body, delay_s, size_bytes)


class UnclaimedMessages:
    """Messages taken by a worker's threads whose visibility the service has not set yet,
    renewed to `window_s` every third of it by one thread (`start`), or by `tick`."""

    def __init__(self, window_s: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s, self._every_s = window_s, renew_every_s(window_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._watched: dict[str, _Watched] = {}  # by receipt handle
        self._closed = threading.Event()

    def watch(self, message: Received, visibility: MessageVisibility) -> ClaimVisibility:
        """Keep `message` hidden until the returned visibility is first used or `done`."""
        watched = _Watched(visibility, self._clock())
        with self._lock:
            self._watched[message.receipt_handle] = watched
        return ClaimVisibility(watched)

    def done(self, message: Received) -> None:
        """The thread is done with `message`: no more renewals."""
        with self._lock:
            self._watched.pop(message.receipt_handle, None)

    def tick(self) -> int:
        """Renew every watched message due; how many were renewed."""
        now = self._clock()
        with self._lock:
            due = [w for w in self._watched.values() if now - w.extended_at >= self._every_s]
        renewed = 0
        for watched in due:
            with watched.lock:
                if watched.owned:
                    continue
                watched.extended_at = now
                watched.visibility(self._window_s)
                renewed += 1
        return renewed

    def start(self) -> None:
        """Renew on a thread of its own until `close`."""
        thread = threading.Thread(target=self._run, name="receive-window", daemon=True)
        thread.start()

    def close(self) -> None:
        """Stop the renewing thread."""
        self._closed.set()

    def _run(self) -> None:
        while not self._closed.wait(TICK_S):
            try:
                self.tick()
            except Exception:  # a failed renewal is logged by the queue; never stop renewing
                log.exception("worker.window_renew_failed")
