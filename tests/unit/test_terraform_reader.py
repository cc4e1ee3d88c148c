"""The local reader of terraform/: expressions it resolves, and those it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpipe.local.provision import table_definition
from dlpipe.local.terraform import TerraformModule, TerraformReadError

HCL = """
variable "name_prefix" {
  type    = string
  default = "t-"
}
variable "timeout_seconds" {
  type    = number
  default = 60
}
locals {
  table   = "${var.name_prefix}things"
  is_prod = var.name_prefix == "prod-"
}
resource "aws_dynamodb_table" "things" {
  name         = local.table
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "ID"
  attribute {
    name = "ID"
    type = "S"
  }
  attribute {
    name = "When"
    type = "N"
  }
  global_secondary_index {
    name            = "WhenIndex"
    hash_key        = "ID"
    range_key       = "When"
    projection_type = "ALL"
  }
  ttl {
    attribute_name = "TTL"
    enabled        = true
  }
}
resource "aws_sqs_queue" "q" {
  name                       = "${var.name_prefix}q-${data.aws_caller_identity.current.account_id}"
  visibility_timeout_seconds = var.timeout_seconds * 6
  kms_master_key_id          = aws_kms_key.k.arn
}
"""


@pytest.fixture
def module(tmp_path: Path) -> TerraformModule:
    (tmp_path / "main.tf").write_text(HCL)
    return TerraformModule.load(tmp_path)


def test_interpolation_locals_variables_and_arithmetic_resolve(module: TerraformModule) -> None:
    """ "${var.x}things", local refs, known data sources and `a * 6` resolve to values."""
    queue = module.resource("aws_sqs_queue", "q")
    assert module.value(queue["name"]) == "t-q-123456789012"
    assert module.value(queue["visibility_timeout_seconds"]) == 360
    assert module.value(module.locals["is_prod"]) is False


def test_variable_overrides_replace_defaults(tmp_path: Path) -> None:
    """A name prefix given at load time wins over the HCL default."""
    (tmp_path / "main.tf").write_text(HCL)
    module = TerraformModule.load(tmp_path, name_prefix="prod-")
    assert module.value(module.locals["table"]) == "prod-things"
    assert module.value(module.locals["is_prod"]) is True


def test_references_to_other_resources_are_refused_not_guessed(module: TerraformModule) -> None:
    """A resource attribute the emulator cannot know raises TerraformReadError."""
    with pytest.raises(TerraformReadError):
        module.value(module.resource("aws_sqs_queue", "q")["kms_master_key_id"])


WHEN_INDEX = {
    "IndexName": "WhenIndex",
    "KeySchema": [
        {"AttributeName": "ID", "KeyType": "HASH"},
        {"AttributeName": "When", "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "ALL"},
}


def test_hash_key_range_key_index_form_becomes_a_create_table_request(
    module: TerraformModule,
) -> None:
    """GSIs written with hash_key/range_key (terraform/'s form) become CreateTable's KeySchema."""
    definition = table_definition(module, "things")
    assert definition.create_request["GlobalSecondaryIndexes"] == [WHEN_INDEX]
    assert (definition.name, definition.ttl_attribute) == ("t-things", "TTL")


def test_key_schema_index_form_becomes_the_same_request(tmp_path: Path) -> None:
    """GSIs written with key_schema blocks (providers >= 6.29) give the same request."""
    key_schema = (
        '    key_schema {\n      attribute_name = "ID"\n      key_type       = "HASH"\n    }\n'
        '    key_schema {\n      attribute_name = "When"\n      key_type       = "RANGE"\n    }\n'
    )
    hcl = HCL.replace('    hash_key        = "ID"\n    range_key       = "When"\n', key_schema)
    assert hcl != HCL
    (tmp_path / "main.tf").write_text(hcl)
    definition = table_definition(TerraformModule.load(tmp_path), "things")
    assert definition.create_request["GlobalSecondaryIndexes"] == [WHEN_INDEX]


def test_unknown_resource_is_a_clear_error(module: TerraformModule) -> None:
    """Asking for a table that terraform/ does not define says so."""
    with pytest.raises(TerraformReadError, match=r"aws_dynamodb_table\.jobs"):
        module.resource("aws_dynamodb_table", "jobs")
