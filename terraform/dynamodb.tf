# The two tracking tables. Names, keys, GSIs and attribute types are a contract
# (shared/DESIGN.md): the code, the operators' CLI and local provisioning read them from here.

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

  attribute {
    name = "BatchID"
    type = "S"
  }

  global_secondary_index {
    name            = "StatusIndex"
    projection_type = "ALL"

    key_schema {
      attribute_name = "Status"
      key_type       = "HASH"
    }

    key_schema {
      attribute_name = "StatusUpdatedAt"
      key_type       = "RANGE"
    }
  }

  global_secondary_index {
    name            = "BatchIndex"
    projection_type = "ALL"

    key_schema {
      attribute_name = "BatchID"
      key_type       = "HASH"
    }

    key_schema {
      attribute_name = "Status"
      key_type       = "RANGE"
    }
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
    projection_type = "ALL"

    key_schema {
      attribute_name = "PollingDate"
      key_type       = "HASH"
    }

    key_schema {
      attribute_name = "Status"
      key_type       = "RANGE"
    }
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
