"""LocalStack's endpoints, opted into with DLPIPE_LOCALSTACK=1 (the `dlpipe` command applies
it at start, before any client is built).

Each service dlpipe calls gets AWS_ENDPOINT_URL_<SERVICE> from localstack_client's service
map, which follows LOCALSTACK_HOST (`host:port`, default localhost:4566) and USE_SSL. What the
caller set keeps precedence: a service's own AWS_ENDPOINT_URL_<SERVICE>, and AWS_ENDPOINT_URL,
which already names one endpoint for every service. Dev kit only: never in the Lambda zip.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from dlpipe.config import ENV_ENDPOINT_URL, SERVICE_ENDPOINT_ENV, ConfigError

ENV_LOCALSTACK = "DLPIPE_LOCALSTACK"
ENV_LOCALSTACK_HOST = "LOCALSTACK_HOST"
_ON, _OFF = frozenset({"1", "true", "yes", "on"}), frozenset({"", "0", "false", "no", "off"})


def _switched_on(environ: MutableMapping[str, str]) -> bool:
    raw = environ.get(ENV_LOCALSTACK, "").strip().lower()
    if raw not in _ON | _OFF:
        raise ConfigError(f"{ENV_LOCALSTACK} must be true or false, got {raw!r}")
    return raw in _ON


def use_localstack(environ: MutableMapping[str, str]) -> dict[str, str]:
    """With the switch on, set the endpoint variable of each service the caller left unset
    to LocalStack's; return what was set (nothing with the switch off)."""
    if not _switched_on(environ) or environ.get(ENV_ENDPOINT_URL):
        return {}
    # localstack_client imports boto3 (~0.5 s): only with the switch on.
    from localstack_client.config import get_service_endpoint  # noqa: PLC0415

    host = environ.get(ENV_LOCALSTACK_HOST) or None  # None: localstack_client's default
    added = {}
    for service, name in SERVICE_ENDPOINT_ENV.items():
        if environ.get(name):
            continue
        try:
            url = get_service_endpoint(service, localstack_host=host)
        except RuntimeError as exc:  # an unparsable LOCALSTACK_HOST
            raise ConfigError(f"{ENV_LOCALSTACK_HOST}: {exc}") from exc
        if url:
            added[name] = environ[name] = url
    return added
