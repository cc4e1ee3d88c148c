"""A named feed's configuration on AWS: one SSM parameter per feed, `{path}/{name}`, holding
the JSON terraform/feeds.tf writes (the feed's fields, its secrets as ARNs). Read with one
GetParameter per feed and process, validated by the domain's one rule (feed_from_mapping); the
operator commands list them all with GetParametersByPath (feeds_under_path).

A GetParameter that SSM throttles, fails with a 5xx or never reaches it (after the client's own
retries) is DependencyUnavailableError (dependency "SSM"): the orchestrator waits it out within
its AWS outage budget. A missing parameter is UnknownFeedError; any other refusal (access
denied) is AwsRequestError naming the parameter (dlpipe/adapters/aws_errors.py decides which).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws_errors import raise_aws_error
from dlpipe.domain.feeds import Feed, FeedError, feed_from_mapping, is_feed_name, shown_name
from dlpipe.feed_settings import UnknownFeedError


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


def feeds_under_path(client: ParameterLister, path: str) -> dict[str, Feed]:
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
            feeds[name] = feed_from_parameter(name, full, parameter.get("Value"))
        if not page.get("NextToken"):
            return feeds
        request["NextToken"] = page["NextToken"]


class ParameterFeeds:
    """Feeds from SSM parameters under `path`, each read once per process (then cached)."""

    def __init__(self, client: ParameterReader, path: str) -> None:
        self._client = client
        self._path = path.rstrip("/")
        self._lock = threading.Lock()
        self._cache: dict[str, Feed] = {}

    def feed(self, name: str) -> Feed:
        """The feed called `name`; UnknownFeedError without its parameter, FeedError (one
        line naming the feed) when the parameter is not a valid feed."""
        if not is_feed_name(name):
            raise UnknownFeedError(name)  # never a parameter name built from a bad value
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        feed = self._read(name)
        with self._lock:
            self._cache[name] = feed
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
        return feed_from_parameter(name, parameter, response["Parameter"].get("Value", ""))


def feed_from_parameter(name: str, parameter: str, value: object) -> Feed:
    """The feed a parameter's JSON describes; FeedError (one line) if it is not one."""
    where = f"feeds.{shown_name(name)}: SSM parameter {parameter}"
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
    return feed_from_mapping(name, fields)
