"""A whole-number setting's range, and the one error every malformed setting raises.

dlpipe/config.py holds the table of every such setting (INT_SETTINGS); this is how one is
read. Apart from config.py so that the rules of reading stay short beside the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


@dataclass(frozen=True)
class IntSetting:
    """A whole-number setting: its variable, default and the range a load accepts."""

    env: str
    default: int
    minimum: int
    maximum: int


def int_setting(env: Mapping[str, str], setting: IntSetting) -> int:
    """The setting's value from `env`, its default when unset, or a one-line ConfigError
    naming the variable and its range."""
    raw = env.get(setting.env)
    if raw is None or raw == "":
        return setting.default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{setting.env} must be a whole number, got {raw!a}") from exc
    if not setting.minimum <= value <= setting.maximum:
        raise ConfigError(
            f"{setting.env} must be from {setting.minimum} to {setting.maximum}, got {value}"
        )
    return value
