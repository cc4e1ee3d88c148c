"""Where the running functions find a feed: the local feeds file (DLPIPE_FEEDS_FILE), then, on
AWS, the feed's SSM parameter under DLPIPE_FEEDS_PARAMETER_PATH. The default feed is always
known (from the settings); a feed neither names is an UnknownFeedError."""

from __future__ import annotations

from collections.abc import Mapping

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.feed_settings import ChainedFeeds, FeedSource, FileFeeds


def feed_source(
    settings: Settings, clients: AwsClients | None = None, env: Mapping[str, str] | None = None
) -> FeedSource:
    """The feeds file's feeds (FeedError now if the file is invalid), then the SSM parameters
    when the settings name their path (read on first use of each feed, then cached)."""
    local = FileFeeds.from_env(env)
    path = settings.feeds_parameter_path
    if not path:
        return local
    # Imported here: without a parameter path (local runs) nothing loads botocore for it.
    from dlpipe.adapters.feed_parameters import ParameterFeeds  # noqa: PLC0415

    aws = clients or AwsClients(settings)
    return ChainedFeeds(local, ParameterFeeds(aws.ssm, path, local=settings.allow_http_urls))
