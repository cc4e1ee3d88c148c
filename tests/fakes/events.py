"""An in-memory event bus: what the orchestrator sent, and refusals on demand."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.handoff_events import HandoffEvent


@dataclass
class FakeEventBus:
    """EventSender in memory: `sent` in order; the first `refusals` sends raise as a throttled
    PutEvents entry does (DependencyUnavailableError) and are not recorded."""

    refusals: int = 0
    sent: list[HandoffEvent] = field(default_factory=list)
    attempts: int = 0

    def send(self, event: HandoffEvent) -> None:
        self.attempts += 1
        if self.refusals > 0:
            self.refusals -= 1
            raise DependencyUnavailableError(
                "EventBridge PutEvents: entry refused: ThrottlingException"
            )
        self.sent.append(event)

    def detail_types(self) -> list[str]:
        """The detail-types sent, in order."""
        return [event.detail_type for event in self.sent]
