"""A named feed's configuration on AWS: one SSM parameter per feed, `{path}/{name}`, holding
the JSON terraform/feeds.tf writes (the feed's fields, its secrets as ARNs). Read with one
GetParameter per feed and process, validated by the domain's one rule (feed_from_mapping); a
parameter missing or invalid is asked for again after REREAD_INTERVAL_S (a feed added while
the functions run is found, and a flood of its jobs costs one read); the operator commands
list them all with GetParametersByPath (feeds_under_path).

A GetParameter that SSM throttles, fails with a 5xx or never reaches it (after the client's own
retries) is DependencyUnavailableError (dependency "SSM"): the orchestrator waits it out within
its AWS outage budget. A missing parameter is UnknownFeedError; any other refusal (access
denied) is AwsRequestError naming the parameter (dlpipe/adapters/aws_errors.py decides which).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws_errors import raise_aws_error
from dlpipe.domain.feeds import (
    DEFAULT_FEED_NAME,
    Feed,
    FeedError,
    feed_fields,
    feed_from_mapping,
    is_feed_name,
    shown_name,
)
from dlpipe.feed_settings import REREAD_INTERVAL_S, UnknownFeedError


class ParameterWriter(Protocol):
    """The part of a boto3 SSM client the local stack writes feeds with."""

    def put_parameter(self, **request: Any) -> Mapping[str, Any]:
        """SSM PutParameter."""
        ...


def parameter_value(feed: Feed) -> str:
    """The JSON of `feed`'s parameter, in the shape terraform/feeds.tf writes: every field,
    unset ones null, the name too (tests/infra/test_deployment_contract.py holds the two
    shapes equal). The local stack writes its named feeds with it."""
    return json.dumps({**feed_fields(feed), "name": feed.name}, sort_keys=True)


def publish_feeds(client: ParameterWriter, path: str, feeds: Mapping[str, Feed]) -> None:
    """Write each named feed's parameter under `path`, as Terraform does on AWS (the default
    feed has none: the deployment's own settings configure it)."""
    prefix = path.rstrip("/")
    for name, feed in feeds.items():
        if not feed.is_default:
            request = {"Name": f"{prefix}/{name}", "Value": parameter_value(feed)}
            client.put_parameter(**request, Type="String", Overwrite=True)


class ParameterReader(Protocol):
    """The part of a boto3 SSM client the loader uses."""

    def get_parameter(self, **request: Any) -> Mapping[str, Any]:
        """SSM GetParameter."""
        ...


class ParameterLister(Protocol):
    """The part of a boto3 SSM client the operators' listing uses."""

    def get_parameters_by_path(self, **request: Any) -> Mapping[str, Any]:
        """SSM GetParametersByPath (one page)."""
        ...


def feeds_under_path(client: ParameterLister, path: str, *, local: bool = False) -> dict[str, Feed]:
    """Every feed whose parameter lies directly under `path`, page by page; FeedError (one
    line naming the parameter) for a parameter that is not a valid feed."""
    prefix = path.rstrip("/")
    feeds: dict[str, Feed] = {}
    request: dict[str, Any] = {"Path": prefix, "Recursive": False}
    while True:
        page = client.get_parameters_by_path(**request)
        for parameter in page.get("Parameters", []):
            full = str(parameter.get("Name", ""))
            name = full.rsplit("/", 1)[-1]
            if not is_feed_name(name):
                raise FeedError(f"SSM parameter {full}: {shown_name(name)} is not a feed name")
            feeds[name] = feed_from_parameter(name, full, parameter.get("Value"), local=local)
        if not page.get("NextToken"):
            return feeds
        request["NextToken"] = page["NextToken"]


class ParameterFeeds:
    """Feeds from SSM parameters under `path`: each read once per process and then cached; a
    failed read (no parameter, an invalid one) is answered from memory for `reread_s`."""

    def __init__(
        self,
        client: ParameterReader,
        path: str,
        *,
        local: bool = False,
        reread_s: float = REREAD_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._local = local
        self._path = path.rstrip("/")
        self._reread_s, self._clock = reread_s, clock
        self._lock = threading.Lock()
        self._cache: dict[str, Feed] = {}
        self._misses: dict[str, tuple[float, Callable[[], FeedError]]] = {}

    def feed(self, name: str) -> Feed:
        """The feed called `name`; UnknownFeedError without its parameter, FeedError (one
        line naming the feed) when the parameter is not a valid feed."""
        if not is_feed_name(name):
            raise UnknownFeedError(name)  # never a parameter name built from a bad value
        now = self._clock()
        with self._lock:
            cached = self._cache.get(name)
            miss = self._misses.get(name)
        if cached is not None:
            return cached
        if miss is not None and now - miss[0] < self._reread_s:
            raise miss[1]()
        try:
            feed = self._read(name)
        except FeedError as exc:
            with self._lock:
                self._misses[name] = (now, _again(exc))
            raise
        with self._lock:
            self._cache[name] = feed
            self._misses.pop(name, None)
        return feed

    def _read(self, name: str) -> Feed:
        parameter = f"{self._path}/{name}"
        try:
            response = self._client.get_parameter(Name=parameter)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ParameterNotFound":
                raise UnknownFeedError(name, f" (no SSM parameter {parameter})") from exc
            raise_aws_error(exc, "SSM", "GetParameter", parameter)
        except BotoCoreError as exc:
            raise_aws_error(exc, "SSM", "GetParameter", parameter)
        value = response["Parameter"].get("Value", "")
        return feed_from_parameter(name, parameter, value, local=self._local)


def _again(exc: FeedError) -> Callable[[], FeedError]:
    """A fresh error like `exc`, raised again from memory (never the one instance twice)."""
    if isinstance(exc, UnknownFeedError):
        name, where = exc.feed, exc.where
        return lambda: UnknownFeedError(name, where)
    text = str(exc)
    return lambda: FeedError(text)


def feed_from_parameter(name: str, parameter: str, value: object, *, local: bool = False) -> Feed:
    """The feed a parameter's JSON describes; FeedError (one line) if it is not one. `local`:
    the local-development switch (DLPIPE_ALLOW_HTTP_URLS), as feed_from_mapping takes it."""
    where = f"feeds.{shown_name(name)}: SSM parameter {parameter}"
    if name == DEFAULT_FEED_NAME:  # the deployment's own variables configure it, no parameter
        raise FeedError(f"{where}: the default feed is not configured by a parameter")
    try:
        values = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        values = None
    if not isinstance(values, dict):
        raise FeedError(f"{where} is not a JSON object")
    # Terraform writes the name too; the parameter's own name is the one that counts.
    written = values.pop("name", name)
    if written != name:
        raise FeedError(f"{where} names feed {shown_name(written)}")
    # Terraform writes null for an unset optional field: the Feed's default, not a value.
    fields = {key: item for key, item in values.items() if item is not None}
    return feed_from_mapping(name, fields, local=local)
