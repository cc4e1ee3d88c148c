"""The hand-off events' bus: one PutEvents per event, on EventBridge.

PutEvents answers 200 even when an entry was refused: the refusal is in the answer
(FailedEntryCount, the entry's ErrorCode). Such an entry is never dropped: a throttle or an
internal failure raises DependencyUnavailableError (the orchestrator's durable retry sends it
again after a backoff), any other refusal AwsRequestError (retried a few times, then the step
fails loudly). Each send is logged with the event's ID and the ID EventBridge gave it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws_errors import TRANSIENT_CODES, raise_aws_error
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.handoff_events import SOURCE, HandoffEvent
from dlpipe.domain.text import one_line
from dlpipe.log import get_logger

log = get_logger(component="events")

SERVICE = "EventBridge"
# PutEvents' per-entry error codes that mean "try again" (AWS: "InternalFailure" and
# "ThrottlingException"; the rest, e.g. AccessDeniedException or a malformed entry, will not pass).
_TRANSIENT_ENTRY_CODES = TRANSIENT_CODES | {"InternalFailure", "ThrottlingException"}


class EventBus:
    """Puts hand-off events on one bus (its name or ARN; "default": the account's own)."""

    def __init__(self, client: Callable[[], Any], bus_name: str) -> None:
        # A factory: the client is built at the first send, so wiring a flow costs nothing.
        self._client = client
        self.bus_name = bus_name

    def entry(self, event: HandoffEvent) -> dict[str, str]:
        """The PutEvents entry for `event`."""
        return {
            "Source": SOURCE,
            "DetailType": event.detail_type,
            "Detail": event.detail_json(),
            "EventBusName": self.bus_name,
        }

    def send(self, event: HandoffEvent) -> None:
        """Put `event` on the bus; raise unless EventBridge accepted it."""
        try:
            answer = self._client().put_events(Entries=[self.entry(event)])
        except (ClientError, BotoCoreError) as exc:
            raise_aws_error(exc, SERVICE, "PutEvents", self.bus_name)
        entries = answer.get("Entries") or [{}]
        result = entries[0]
        if (
            answer.get("FailedEntryCount", 0)
            or result.get("ErrorCode")
            or not result.get("EventId")
        ):
            self._refused(event, str(result.get("ErrorCode") or "NoEventId"), result)
        log.info(
            "event.put",
            event_id=event.event_id,
            detail_type=event.detail_type,
            bus=self.bus_name,
            eventbridge_id=result["EventId"],
        )

    def _refused(self, event: HandoffEvent, code: str, result: dict[str, Any]) -> None:
        message = one_line(str(result.get("ErrorMessage") or ""), 200)
        log.warning(
            "event.put_refused",
            event_id=event.event_id,
            detail_type=event.detail_type,
            bus=self.bus_name,
            code=code,
            message=message,
        )
        if code in _TRANSIENT_ENTRY_CODES or code == "NoEventId":
            raise DependencyUnavailableError(
                f"{SERVICE} PutEvents: entry refused: {code}: {message}", dependency=SERVICE
            )
        raise AwsRequestError(SERVICE, "PutEvents", code, message, resource=self.bus_name)
