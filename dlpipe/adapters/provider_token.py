"""The provider's bearer token, read where the settings say: a value, a file or a secret.

`ProviderClient` (dlpipe/adapters/provider_client.py) takes the token as a string; the wiring
reads it here, once per client. A missing or empty token is a one-line ConfigError naming
where it was looked for; the token itself is never logged or put in an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from dlpipe.config import ENV_PROVIDER_TOKEN, ENV_PROVIDER_TOKEN_SECRET, ConfigError, Settings

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients


def token_from_settings(settings: Settings, clients: AwsClients) -> str:
    """The bearer token: from the local setting or a named feed's `file:PATH`, else from the
    Secrets Manager secret."""
    if settings.provider_token:
        return settings.provider_token
    if settings.provider_token_file:
        return _token_from_file(settings.provider_token_file)
    secret_id = settings.provider_token_secret_id
    if not secret_id:
        raise ConfigError(
            f"set {ENV_PROVIDER_TOKEN_SECRET} (on AWS) or {ENV_PROVIDER_TOKEN} (local)"
        )
    try:
        secret = clients.secretsmanager.get_secret_value(SecretId=secret_id)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        raise ConfigError(f"secret {secret_id!r} does not exist or has no value yet") from exc
    token = (secret.get("SecretString") or "").strip()
    if not token:
        raise ConfigError(f"secret {secret_id!r} holds no provider token")
    return token


def _token_from_file(path: str) -> str:
    """A feed's token file (local use): its text, stripped; ConfigError in one line."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"provider token file {path!r} cannot be read ({exc})") from exc
    if not token:
        raise ConfigError(f"provider token file {path!r} holds no provider token")
    return token
