# The two tracking tables. Names, keys, GSIs and attribute types are a contract
# (docs/ARCHITECTURE.md, "Tables"): the code, the operators' CLI and local provisioning read them from here.
#
# GSI keys are hash_key/range_key, which every 6.x provider accepts. The key_schema blocks
# that replace them exist only from 6.29, and its first releases mishandle GSIs of tables in
# use (issues of hashicorp/terraform-provider-aws): a plan diff on every run for a GSI with a
# RANGE key (#46442, fixed in 6.32.1), another when an existing GSI moves to key_schema
# (#46513; fix #46512 still open), and removing one GSI deleting and re-creating all others
# (#46601, fix #46602). hash_key/range_key are deprecated since 6.29 (plans warn) but stay
# until 7.0, hence "< 7.0" in versions.tf. Move to key_schema, raising the floor there, once
# a release with those fixes can be required: tests/infra/test_provider_schema.py demands it.

resource "aws_dynamodb_table" "jobs" {
  name                        = local.jobs_table_name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "FileID"
  deletion_protection_enabled = local.is_prod

  attribute {
    name = "FileID"
    type = "S"
  }

  attribute {
    name = "Status"
    type = "S"
  }

  # Epoch milliseconds, so that "stuck longer than t" is a key-range query.
  attribute {
    name = "StatusUpdatedAt"
    type = "N"
  }

  # "<Status>#<nn>", only while Status is available or downloading (dlpipe/domain/shards.py):
  # StatusIndex is sparse, holding pending jobs only, its writes spread over 8 keys a status.
  attribute {
    name = "StatusShard"
    type = "S"
  }

  # "<BatchID>#<nn>": one batch's index writes spread over 16 keys.
  attribute {
    name = "BatchShard"
    type = "S"
  }

  # Keys, TTL (written once, by the put) and only what a status change writes: no write but a
  # status change touches an index, and readers fetch the jobs by key. docs/ARCHITECTURE.md,
  # "Tables", has the WCU. StatusIndex adds BatchID (changed only by an adoption, which moves
  # StatusUpdatedAt too), so the sweeper filters one batch's stale jobs before fetching them;
  # BatchIndex adds what the day's manifest names (dlpipe/domain/schema.py), so write-manifest
  # reads index items alone.
  global_secondary_index {
    name               = "StatusIndex"
    hash_key           = "StatusShard"
    range_key          = "StatusUpdatedAt"
    projection_type    = "INCLUDE"
    non_key_attributes = ["TTL", "BatchID"]
  }

  global_secondary_index {
    name            = "BatchIndex"
    hash_key        = "BatchShard"
    range_key       = "Status"
    projection_type = "INCLUDE"
    non_key_attributes = [
      "TTL", "Entity", "DestinationKey", "ByteCount", "SHA256", "ErrorMessage",
      "Revision", "RevisedAs", "PreviousVersionID", "PreviousSHA256", "WithdrawnBy",
    ]
  }

  # Epoch seconds; jobs live 30 days.
  ttl {
    attribute_name = "TTL"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = local.is_prod
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.dlpipe.arn
  }
}

resource "aws_dynamodb_table" "batches" {
  name                        = local.batches_table_name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "BatchID"
  deletion_protection_enabled = local.is_prod

  attribute {
    name = "BatchID"
    type = "S"
  }

  attribute {
    name = "PollingDate"
    type = "S"
  }

  attribute {
    name = "Status"
    type = "S"
  }

  global_secondary_index {
    name            = "PollingDateIndex"
    hash_key        = "PollingDate"
    range_key       = "Status"
    projection_type = "ALL"
  }

  # Epoch seconds; batches live 90 days.
  ttl {
    attribute_name = "TTL"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = local.is_prod
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.dlpipe.arn
  }
}
