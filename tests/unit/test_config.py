"""Settings are read once from the environment, typed, with clear errors."""

from __future__ import annotations

import pytest

from dlpipe.config import ConfigError, Settings


def test_defaults_are_the_designs_table_names_and_real_aws() -> None:
    """With nothing set: design table names, no endpoint override, 300 s lease."""
    settings = Settings.from_env({})
    assert (settings.jobs_table, settings.batches_table) == (
        "data-download-jobs",
        "data-download-batches",
    )
    assert settings.endpoint_url is None
    assert settings.lease_seconds == 300


def test_name_prefix_applies_to_both_tables_and_explicit_names_win() -> None:
    """DLPIPE_NAME_PREFIX prefixes the tables; DLPIPE_JOBS_TABLE overrides one."""
    settings = Settings.from_env({"DLPIPE_NAME_PREFIX": "dev-", "DLPIPE_JOBS_TABLE": "custom"})
    assert (settings.jobs_table, settings.batches_table) == ("custom", "dev-data-download-batches")


@pytest.mark.parametrize(
    ("value", "match"), [("abc", "whole number"), ("0", "at least 1"), ("-5", "at least 1")]
)
def test_malformed_numbers_name_the_variable(value: str, match: str) -> None:
    """A bad DLPIPE_LEASE_SECONDS raises ConfigError naming the variable."""
    with pytest.raises(ConfigError, match=f"DLPIPE_LEASE_SECONDS.*{match}"):
        Settings.from_env({"DLPIPE_LEASE_SECONDS": value})


def test_require_names_a_missing_setting() -> None:
    """require() refuses an unset setting with its name."""
    with pytest.raises(ConfigError, match="queue_url"):
        Settings.from_env({}).require("queue_url")


def test_token_is_not_shown_in_repr() -> None:
    """The provider token never appears in the settings' repr."""
    assert "s3cr3t" not in repr(Settings.from_env({"DLPIPE_PROVIDER_TOKEN": "s3cr3t"}))
