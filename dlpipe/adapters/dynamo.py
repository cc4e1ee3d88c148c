"""What both table modules share: error translation, paginated queries and the plumbing of a
conditional write (the conditions themselves stay with each table's methods)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
)

from dlpipe.adapters.aws_errors import is_transient, raise_request_error
from dlpipe.domain.errors import IndexNotReadyError, StoreUnavailableError, TableMissingError
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = get_logger(component="records")
CONDITION_FAILED = "ConditionalCheckFailedException"


def is_condition_failure(exc: ClientError) -> bool:
    """True when a conditional write lost."""
    return exc.response.get("Error", {}).get("Code") == CONDITION_FAILED


def old_item(exc: ClientError) -> dict[str, Any] | None:
    """What the item held when its condition failed (ReturnValuesOnConditionCheckFailure=ALL_OLD)."""
    item: Any = exc.response.get("Item")
    return dict(item) if item else None


# How DynamoDB answers a Query on an index that is gone or not yet readable (a
# ValidationException): an index replaced by an upgrade is deleted, then created and
# backfilled.
_INDEX_MISSING = "does not have the specified index"
_INDEX_BACKFILLING = "backfilling global secondary index"


def _index_not_ready(exc: ClientError) -> tuple[str, str] | None:
    """(index, state) when `exc` says the queried index cannot be read yet."""
    error = exc.response.get("Error", {})
    if error.get("Code") != "ValidationException":
        return None
    message = str(error.get("Message", ""))
    _, colon, named = message.rpartition(":")
    index = named.strip() if colon and named.strip().isidentifier() else "index"
    if _INDEX_MISSING in message:
        return index, "missing or being created"
    if _INDEX_BACKFILLING in message.lower():
        return index, "backfilling"
    return None


def raise_store_error(exc: Exception, table: str) -> NoReturn:
    """Re-raise a boto error as TableMissingError, StoreUnavailableError or AwsRequestError
    (access denied, a malformed request: one line naming DynamoDB, the operation and the code);
    credentials errors stay as botocore raised them (the CLI names them in one line)."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise TableMissingError(
                f"table {table!r} does not exist at this endpoint (run: dlpipe local provision)"
            ) from exc
        not_ready = _index_not_ready(exc)
        if not_ready is not None:
            index, state = not_ready
            raise IndexNotReadyError(
                f"the table {table!r}'s {index} is being built ({state}); try again in a few"
                " minutes, then run `dlpipe tables migrate` once if this is an upgrade"
            ) from exc
        if is_transient(exc):  # throttling, 5xx: aws_errors decides, for every service
            raise StoreUnavailableError(f"DynamoDB kept refusing ({code}) on {table!r}") from exc
        raise_request_error(exc, "DynamoDB", exc.operation_name, table)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        raise exc  # a configuration problem, not an outage: the CLI says so in one line
    if isinstance(exc, BotoCoreError):
        raise StoreUnavailableError(f"DynamoDB unreachable for {table!r}: {exc}") from exc
    raise exc


def paginate_query(
    client: DynamoDBClient,
    table: str,
    request: dict[str, Any],
    limit: int | None = None,
    on_page: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield items of a Query, following LastEvaluatedKey to the end (or to `limit` items);
    `on_page` sees each page's response (its Count, its ConsumedCapacity)."""
    yielded = 0
    start_key: dict[str, Any] | None = None
    while True:
        page_request = dict(request, TableName=table)
        if start_key:
            page_request["ExclusiveStartKey"] = start_key
        try:
            page = client.query(**page_request)
        except (ClientError, BotoCoreError) as exc:
            raise_store_error(exc, table)
        if on_page is not None:
            on_page(dict(page))
        for item in page.get("Items", []):
            yield item
            yielded += 1
            if limit is not None and yielded >= limit:
                return
        start_key = page.get("LastEvaluatedKey")
        if not start_key:
            return


def call(table: str, operation: Callable[..., Any], **request: Any) -> Any:
    """Run one DynamoDB call, translating infrastructure errors (not condition failures)."""
    try:
        return operation(TableName=table, **request)
    except ClientError as exc:
        if is_condition_failure(exc):
            raise
        raise_store_error(exc, table)
    except BotoCoreError as exc:
        raise_store_error(exc, table)


_R = TypeVar("_R")


def conditional_put(
    client: DynamoDBClient,
    table: str,
    key: dict[str, Any],
    item: dict[str, Any],
    *,
    condition: str,
    names: dict[str, str],
    parse: Callable[[dict[str, Any]], _R],
    refused: Callable[[str, _R | None], Exception],
    own: Callable[[_R], bool] | None = None,
    rule: str = "",
) -> None:
    """PutItem of `item` (whose key is `key`) under `condition`; a lost condition is
    `_landed_or_refused`'s."""
    try:
        call(
            table,
            client.put_item,
            Item=item,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as exc:
        _landed_or_refused(exc, table, key, parse=parse, refused=refused, own=own, rule=rule)


def conditional_update(
    client: DynamoDBClient,
    table: str,
    key: dict[str, Any],
    *,
    update: str,
    condition: str,
    names: dict[str, str],
    values: dict[str, Any],
    parse: Callable[[dict[str, Any]], _R],
    refused: Callable[[str, _R | None], Exception],
    own: Callable[[_R], bool] | None = None,
    rule: str = "",
) -> _R:
    """UpdateItem under `condition`, returning the new record; a lost condition is
    `_landed_or_refused`'s."""
    try:
        response = call(
            table,
            client.update_item,
            Key=key,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as exc:
        return _landed_or_refused(exc, table, key, parse=parse, refused=refused, own=own, rule=rule)
    return parse(response["Attributes"])


def _landed_or_refused(
    exc: ClientError,
    table: str,
    key: dict[str, Any],
    *,
    parse: Callable[[dict[str, Any]], _R],
    refused: Callable[[str, _R | None], Exception],
    own: Callable[[_R], bool] | None,
    rule: str,
) -> _R:
    """A conditional write's ClientError: a lost condition raises `refused(state, what the
    item held)`, learned without a second read (ALL_OLD), unless the stored record is this
    very write (`own`, a domain rule), applied by an earlier send that botocore re-sent after
    a lost response: then it is the write's success, and the stored record is returned."""
    if not is_condition_failure(exc):
        raise exc
    old = old_item(exc)
    current = parse(old) if old else None
    if current is not None and own is not None and own(current):
        log.info("record.write_landed_before", table=table, key=_key_text(key), rule=rule)
        return current
    state = f"it is {getattr(current, 'status', '?')}" if current else "it does not exist"
    raise refused(state, current) from exc


def _key_text(key: dict[str, Any]) -> str:
    return ",".join(str(next(iter(v.values()))) for v in key.values())
