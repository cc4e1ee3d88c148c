"""terraform/ loads as Terraform loads it, and every check it makes holds for each deployment.

The other infra tests read blocks of the module; these hand the whole of it to the terraform
binary, offline. `terraform providers` parses and decodes every file as one module before it
needs a provider: a duplicate resource, data source, variable or output, a block Terraform does
not know, a misspelt block argument and a syntax error each fail it, where python-hcl2 merges
or accepts them. `terraform fmt -check` is Terraform's own formatting. Then every variable's
validation, every local and every resource's lifecycle precondition is evaluated by
`terraform apply` of the rendered module (tests/infra/terraform_render.py) for the default
variables and each fixture under tests/infra/fixtures/, as a plan would.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.infra.hcl import TERRAFORM_DIR
from tests.infra.terraform_render import TERRAFORM, Rendered
from tests.infra.test_deployment_contract import DEPLOYMENTS

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")


def _terraform(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TERRAFORM, *args, "-no-color"],  # type: ignore[list-item]
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture(scope="module")
def module_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """terraform/'s files in a folder of their own (no .terraform/ or state of a user's)."""
    directory = tmp_path_factory.mktemp("terraform") / "terraform"
    shutil.copytree(
        TERRAFORM_DIR, directory, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*")
    )
    return directory


def test_the_module_loads_as_one_configuration(module_copy: Path) -> None:
    """`terraform providers` reads and decodes every .tf file as one module and exits 0."""
    loaded = _terraform(module_copy, "providers")
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert "provider[registry.terraform.io/hashicorp/aws]" in loaded.stdout


def test_the_module_is_formatted_as_terraform_fmt_formats_it(module_copy: Path) -> None:
    """`terraform fmt -check` finds nothing to rewrite in any file."""
    formatted = _terraform(module_copy, "fmt", "-check", "-recursive", "-diff")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return Rendered(tmp_path_factory.mktemp("checks"), {}, preconditions=True)


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_validation_and_precondition_holds_for_the_deployment(
    checks: Rendered, deployment: str
) -> None:
    """The defaults and each fixture pass every variable validation and every resource's
    precondition, and every local evaluates."""
    applied = checks.apply(DEPLOYMENTS[deployment])
    assert applied.returncode == 0, applied.stdout + applied.stderr


def refused(checks: Rendered, variables: dict[str, Any]) -> str:
    """Terraform's words when `variables` fail a check; AssertionError if they pass."""
    applied = checks.apply(variables)
    assert applied.returncode != 0, f"accepted: {variables}"
    return " ".join((applied.stdout + applied.stderr).split())


def test_the_fixtures_name_only_declared_variables() -> None:
    """Terraform only warns of an undeclared variable in a var file: a fixture naming one
    would test nothing it seems to."""
    from tests.infra.hcl import Module

    declared = set(Module.load().variables)
    for name, variables in DEPLOYMENTS.items():
        named = {key for key in variables if not key.startswith("__")}  # python-hcl2's comments
        assert named <= declared, (name, sorted(named - declared))
