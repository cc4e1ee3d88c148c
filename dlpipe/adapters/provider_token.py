"""The provider's bearer token, read where the settings say: a value, a file or a secret.

`ProviderClient` (dlpipe/adapters/provider_client.py) takes the token as a string; the wiring
reads it here, once per client, and again when the provider refuses it (`RefreshingSigner`).
A missing or empty token is a one-line ConfigError naming where it was looked for; the token
itself is never logged or put in an error. For the downloader, Secrets Manager unavailable
(throttled, 5xx, timing out, not reachable) is DependencyUnavailableError, an outage the file
waits out (adapters/reread.py:get_secret).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from dlpipe.adapters.reread import Rereadable, get_secret
from dlpipe.config import ENV_PROVIDER_TOKEN, ENV_PROVIDER_TOKEN_SECRET, ConfigError, Settings
from dlpipe.domain.feeds import is_bearer_token
from dlpipe.domain.provider_errors import ProviderAuthError
from dlpipe.domain.redaction import register_secret
from dlpipe.secret_files import SecretFileError, read_secret_text

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients
    from dlpipe.adapters.provider_client import ProviderClient
    from dlpipe.domain.listing import FileDescriptor


def token_from_settings(settings: Settings, clients: AwsClients, *, outage: bool = False) -> str:
    """The bearer token: from the local setting or a named feed's `file:PATH`, else from the
    Secrets Manager secret. With `outage` (the downloader) Secrets Manager unavailable is
    DependencyUnavailableError (reread.get_secret); without it (the orchestrator's checks and
    flow) botocore's errors are left as they are, for the probe that classifies them
    (adapters/readiness.py)."""
    if settings.provider_token:
        return _checked(settings.provider_token, ENV_PROVIDER_TOKEN)
    if settings.provider_token_file:
        return _checked(
            _token_from_file(settings.provider_token_file),
            f"provider token file {settings.provider_token_file!r}",
        )
    secret_id = settings.provider_token_secret_id
    if not secret_id:
        raise ConfigError(
            f"set {ENV_PROVIDER_TOKEN_SECRET} (on AWS) or {ENV_PROVIDER_TOKEN} (local)"
        )
    try:
        if outage:
            secret = get_secret(clients.secretsmanager, secret_id)
        else:
            secret = clients.secretsmanager.get_secret_value(SecretId=secret_id)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        raise ConfigError(f"secret {secret_id!r} does not exist or has no value yet") from exc
    token = (secret.get("SecretString") or "").strip()
    if not token:
        raise ConfigError(f"secret {secret_id!r} holds no provider token")
    return _checked(token, f"secret {secret_id!r}")


def _checked(token: str, where: str) -> str:
    """`token` if it is one bearer token; a ConfigError naming `where`, never the token."""
    # Anything else (a pasted token with a newline, a file: secret pointing at the wrong file)
    # is refused without echoing it: the HTTP library would quote the whole header in its error.
    register_secret(token)  # whatever it holds, no error or log line may quote it
    if is_bearer_token(token):
        return token
    raise ConfigError(
        f"the provider token in {where} is not one line of visible ASCII characters (no"
        f" spaces, line breaks or control characters, at most 4096); it is not shown here"
    )


def _token_from_file(path: str) -> str:
    """A feed's token file (local use): its text, stripped; ConfigError in one line."""
    try:
        token = read_secret_text(path).strip()
    except SecretFileError as exc:
        raise ConfigError(f"provider token file {path!r} {exc}") from None
    if not token:
        raise ConfigError(f"provider token file {path!r} holds no provider token")
    return token


class RefreshingSigner:
    """The provider client on the token as last read: a refused token (401/403) makes its
    source be read again (bounded, adapters/reread.py) and the call tried once with a token
    read since, so a rotated token reaches a running process without a restart."""

    def __init__(self, token: Rereadable[str], client: Callable[[str], ProviderClient]) -> None:
        self._token, self._new_client = token, client
        self._lock = threading.Lock()
        self._client: tuple[str, ProviderClient] | None = None

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """The file's descriptor with a fresh presigned URL (ProviderClient.get_file)."""
        token = self._token.value
        try:
            return self._client_for(token).get_file(entity, date)
        except ProviderAuthError:
            newer = self._token.newer_than(token)
            if newer is None:
                raise
        return self._client_for(newer).get_file(entity, date)

    def _client_for(self, token: str) -> ProviderClient:
        with self._lock:
            if self._client is None or self._client[0] != token:
                self._client = (token, self._new_client(token))
            return self._client[1]
