"""Where the running functions find the feeds, in one precedence: the local feeds file
(DLPIPE_FEEDS_FILE) first, then, on AWS, the SSM parameters under DLPIPE_FEEDS_PARAMETER_PATH.
`feed_source` looks one feed up (the file, then the feed's own parameter); `configured_feeds`
lists them all (the file, then one listing of the path) for the worker's queues, the
orchestrator's reserved prefixes and the operator commands. A feed both define is the file's
for all of them. The default feed is always known (from the settings); a feed neither names
is an UnknownFeedError."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.feeds import Feed, FeedError, check_prefixes
from dlpipe.feed_settings import ChainedFeeds, FeedSource, FileFeeds
from dlpipe.feeds_file import feeds_from_env

# What a listing of the parameters may fail with; `configured_feeds(unlisted=...)` takes it.
UNLISTED_ERRORS = (FeedError, AwsRequestError, DependencyUnavailableError)


def feed_source(
    settings: Settings,
    clients: AwsClients | None = None,
    env: Mapping[str, str] | None = None,
    *,
    checked: bool = False,
) -> FeedSource:
    """The feeds file's feeds (FeedError now if the file is invalid), then the SSM parameters
    when the settings name their path (read on first use of each feed, then cached).
    `checked` (the orchestrator's runs, whose role may list the path): a named feed found is
    refused, FeedError, while `configured_feeds` refuses the set (two prefixes overlap)."""
    local = FileFeeds.from_env(env)
    path = settings.feeds_parameter_path
    if not path:
        return local
    # Imported here: without a parameter path (local runs) nothing loads botocore for it.
    from dlpipe.adapters.feed_parameters import ParameterFeeds  # noqa: PLC0415

    aws = clients or AwsClients(settings)
    chain = ChainedFeeds(local, ParameterFeeds(aws.ssm, path, local=settings.allow_http_urls))
    if not checked:
        return chain
    return _RuleChecked(chain, lambda: configured_feeds(settings, aws, env))


class _RuleChecked:
    """A source whose named feeds run only while every configured feed keeps the prefix rule:
    a feed whose files could land among another's starts no day (the feeds file checks itself
    when read; the parameters, listed at each lookup, are checked here)."""

    def __init__(self, source: FeedSource, listed: Callable[[], object]) -> None:
        self._source, self._listed = source, listed

    def feed(self, name: str) -> Feed:
        """The source's feed `name`, once the configured feeds are listed without refusal."""
        found = self._source.feed(name)
        if not found.is_default:
            self._listed()  # FeedError naming the two feeds; SSM's errors as they are
        return found


def configured_feeds(
    settings: Settings,
    clients: AwsClients | None = None,
    env: Mapping[str, str] | None = None,
    *,
    unlisted: Callable[[Exception], None] | None = None,
) -> dict[str, Feed]:
    """Every configured feed, read now: the feeds file's (without one, the default feed
    alone) and every parameter under the settings' path, the file's feed winning a name clash
    as in `feed_source`'s chain. The prefix rule holds over the whole set, whatever each
    feed's source: FeedError (one line naming both feeds) when two prefixes overlap.

    A listing of the parameters that fails (a bad parameter, an overlap it brings, SSM
    refusing or unavailable) raises; with `unlisted`, the error is handed to it instead and
    the feeds file's feeds alone are returned."""
    local = feeds_from_env(env)  # FeedError if the file is invalid (its own overlaps too)
    path = settings.feeds_parameter_path
    if not path:
        return local
    # Imported here, as in feed_source.
    from dlpipe.adapters.feed_parameters import feeds_under_path  # noqa: PLC0415

    aws = clients or AwsClients(settings)
    try:
        feeds = {**feeds_under_path(aws.ssm, path, local=settings.allow_http_urls), **local}
        check_prefixes(feeds)
    except UNLISTED_ERRORS as exc:
        if unlisted is None:
            raise
        unlisted(exc)
        return local
    return feeds
