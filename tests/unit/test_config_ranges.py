"""Every whole-number setting has a range, enforced when the environment is loaded.

A value outside it is one ConfigError naming the variable and the range (a lease of 10**12 s
once reached the claim's datetime arithmetic as twenty thread tracebacks); the bounds
themselves load. Terraform's validations may be stricter than the code, never wider.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from dlpipe.config import INT_SETTINGS, ConfigError, Settings
from tests.infra.hcl import TERRAFORM_DIR, Module

CASES = [(field, spec) for field, spec in INT_SETTINGS.items()]


def test_every_whole_number_setting_has_a_range() -> None:
    """Each int field of Settings is loaded through the range table, and only they are."""
    ints = {f.name for f in dataclasses.fields(Settings) if f.type in ("int", int)}
    assert ints == set(INT_SETTINGS)


@pytest.mark.parametrize(("field", "spec"), CASES, ids=[field for field, _ in CASES])
def test_a_setting_loads_its_bounds_and_refuses_past_them(field: str, spec: object) -> None:
    """The minimum and maximum load as themselves; one past either is one line naming the
    variable and its range; so is a word or a number too large for any arithmetic."""
    setting = INT_SETTINGS[field]
    for value in (setting.minimum, setting.maximum):
        assert getattr(Settings.from_env({setting.env: str(value)}), field) == value
    assert getattr(Settings.from_env({}), field) == setting.default
    assert setting.minimum <= setting.default <= setting.maximum
    want = f"{setting.env} must be from {setting.minimum} to {setting.maximum}, got "
    for value in (setting.minimum - 1, setting.maximum + 1, 10**18, -(10**18)):
        with pytest.raises(ConfigError) as refused:
            Settings.from_env({setting.env: str(value)})
        assert str(refused.value) == f"{want}{value}"
    with pytest.raises(ConfigError, match=rf"^{setting.env} must be a whole number, got '1m'$"):
        Settings.from_env({setting.env: "1m"})


_PASSED = re.compile(r"(DLPIPE_\w+)\s*=\s*tostring\(var\.(\w+)\)")
_RANGE = re.compile(r"var\.(\w+) >= (-?\d+) && var\.\1 <= (-?\d+)")
_FLOOR = re.compile(r"var\.(\w+) >= (-?\d+)")


def _terraform_ranges() -> dict[str, tuple[int, int | None]]:
    """Each variable Terraform hands the code as a number, by the environment variable: the
    range its validation accepts (no upper bound: None)."""
    module = Module.load()
    passed = {
        variable: env
        for path in TERRAFORM_DIR.glob("*.tf")
        for env, variable in _PASSED.findall(path.read_text(encoding="utf-8"))
    }
    ranges: dict[str, tuple[int, int | None]] = {}
    for variable, env in passed.items():
        for validation in module.variables[variable].get("validation", []):
            condition = validation["condition"]
            bounded = _RANGE.search(condition)
            floor = _FLOOR.search(condition)
            if bounded:
                ranges[env] = (int(bounded.group(2)), int(bounded.group(3)))
            elif floor:
                ranges[env] = (int(floor.group(2)), None)
    return ranges


def test_terraform_never_hands_the_code_a_value_its_range_refuses() -> None:
    """Every range Terraform's validations allow for a setting lies within the code's."""
    by_env = {spec.env: spec for spec in INT_SETTINGS.values()}
    ranges = _terraform_ranges()
    assert len(ranges) >= 8  # lease, polls, offset, resend, both budgets, share, ...
    for env, (low, high) in ranges.items():
        spec = by_env[env]
        assert spec.minimum <= low, env
        assert high is not None, f"{env}: Terraform's validation has no upper bound"
        assert high <= spec.maximum, env
