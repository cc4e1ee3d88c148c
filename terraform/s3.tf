# Destination of the decrypted files. The account id and region in the name keep it globally
# unique without a random suffix, so the name is predictable for operators and local runs.
resource "aws_s3_bucket" "destination" {
  #checkov:skip=CKV_AWS_18:Server access logs would need a second bucket per environment; every object written is already recorded per file in the jobs table (key, size, SHA-256), and object-level audit belongs to the account's CloudTrail data events.
  #checkov:skip=CKV_AWS_144:Cross-region replication is not needed: every object can be downloaded again from the provider and the jobs table records what was stored; replication would double storage cost.
  bucket = "${var.name_prefix}dlpipe-data-${data.aws_caller_identity.current.account_id}-${var.aws_region}"
}

resource "aws_s3_bucket_ownership_controls" "destination" {
  bucket = aws_s3_bucket.destination.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "destination" {
  bucket                  = aws_s3_bucket.destination.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "destination" {
  bucket = aws_s3_bucket.destination.id

  rule {
    # The bucket key cuts KMS requests from one per object (and part) to one per bucket-key
    # lifetime, which matters at 100,000 files a day.
    bucket_key_enabled = true

    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.dlpipe.arn
    }
  }
}

resource "aws_s3_bucket_versioning" "destination" {
  bucket = aws_s3_bucket.destination.id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "destination" {
  bucket = aws_s3_bucket.destination.id

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"

    filter {}

    # A downloader that dies mid-upload leaves parts that are billed until aborted.
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }
  }

  depends_on = [aws_s3_bucket_versioning.destination]
}

# Object-created events go to EventBridge, where downstream consumers can subscribe to
# "file arrived" without touching this configuration. Costs nothing while no rule matches.
resource "aws_s3_bucket_notification" "destination" {
  bucket      = aws_s3_bucket.destination.id
  eventbridge = true
}

resource "aws_s3_bucket_policy" "destination" {
  bucket = aws_s3_bucket.destination.id
  policy = data.aws_iam_policy_document.destination_bucket.json

  depends_on = [aws_s3_bucket_public_access_block.destination]
}

data "aws_iam_policy_document" "destination_bucket" {
  # A Deny for everyone: plain-HTTP requests are refused whoever makes them.
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.destination.arn,
      "${aws_s3_bucket.destination.arn}/*",
    ]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}
