# One customer-managed key encrypts dlpipe's data at rest (tables, queues, bucket, secrets,
# log groups, Lambda environment variables, the alarm topic, the schedule).
resource "aws_kms_key" "dlpipe" {
  description             = "dlpipe data at rest"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.kms_key.json
}

resource "aws_kms_alias" "dlpipe" {
  name          = "alias/${var.name_prefix}dlpipe"
  target_key_id = aws_kms_key.dlpipe.key_id
}

# In a key policy the resource "*" means "this key": no other value is allowed there.
# Our own roles get their key permissions from IAM (first statement); only the two services
# that act without one of our roles are named here.
data "aws_iam_policy_document" "kms_key" {
  #checkov:skip=CKV_AWS_109:This is a key policy, not an identity policy: its "*" resource is the key itself, and key administration is delegated to IAM in this account (the AWS-documented default).
  #checkov:skip=CKV_AWS_111:This is a key policy: "*" is the key itself; the two service statements are bounded by encryption-context and source-account conditions.
  #checkov:skip=CKV_AWS_356:This is a key policy: the only resource a key policy can name is "*", meaning this key.
  statement {
    sid       = "AccountAdministersKeyThroughIam"
    actions   = ["kms:*"]
    resources = ["*"]

    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account_id}:root"]
    }
  }

  statement {
    sid       = "CloudWatchLogsEncryptsOurLogGroups"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]

    principals {
      type        = "Service"
      identifiers = ["logs.${var.aws_region}.amazonaws.com"]
    }

    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${var.aws_region}:${local.account_id}:log-group:*"]
    }
  }

  statement {
    sid       = "CloudWatchAlarmsPublishToEncryptedTopic"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey*"]
    resources = ["*"]

    principals {
      type        = "Service"
      identifiers = ["cloudwatch.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}
