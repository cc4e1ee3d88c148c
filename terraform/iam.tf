# One role per principal, each allowed only the actions it uses on the resources it uses.
# Statements whose resource must be "*" say why; tests/infra/test_terraform_static.py keeps
# a list of them and fails on any other wildcard.

# --- what the named feeds add ----------------------------------------------------------------

# A named feed (feeds.tf) adds no statement: the statements that grant a purpose on the default
# feed's resources list the named feeds' too, so a role's inline policy (IAM counts at most
# 10,240 characters per role, whitespace aside) grows only by the ARNs that must be exact.
# tests/iam/test_policy_size.py computes each role's size with 30 named feeds.
locals {
  # Every named feed's download queue by the name dlpipe gives it (sqs.tf), and every feed's
  # parameter under the feeds' path: patterns of constant size rather than each resource's
  # ARN (about 85 characters per feed and statement, several statements per role). They also
  # match a queue or parameter of that name that is not a feed's, in this account and region:
  # only dlpipe creates names under its name_prefix (another deployment here needs another
  # prefix), so the patterns grant nothing the exact ARNs would not. None without named feeds.
  feed_queue_arn_patterns = length(var.feeds) > 0 ? [
    "arn:${local.partition}:sqs:${data.aws_region.current.region}:${local.account_id}:${var.name_prefix}dlpipe-downloads-feed-*",
  ] : []
  feed_parameter_arn_patterns = length(var.feeds) > 0 ? [
    "arn:${local.partition}:ssm:${data.aws_region.current.region}:${local.account_id}:parameter${local.feeds_parameter_path}/*",
  ] : []

  # The feeds' secrets stay exact ARNs: a feed may name any existing secret (feeds.tf), whose
  # name dlpipe does not own. A secret shared by several feeds is listed once.
  feed_token_secret_arn_list       = distinct([for name in sort(keys(var.feeds)) : local.feed_token_secret_arns[name]])
  feed_private_key_secret_arn_list = distinct([for name in sort(keys(var.feeds)) : local.feed_private_key_secret_arns[name]])
}

# --- trust policies --------------------------------------------------------------------------

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "scheduler_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }

    # Confused-deputy guard: only schedules in this account may use the role.
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

# --- orchestrator ----------------------------------------------------------------------------

resource "aws_iam_role" "orchestrator" {
  name               = "${var.name_prefix}dlpipe-orchestrator"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "orchestrator" {
  name   = "dlpipe-orchestrator"
  role   = aws_iam_role.orchestrator.id
  policy = data.aws_iam_policy_document.orchestrator.json
}

data "aws_iam_policy_document" "orchestrator" {
  # The durable execution SDK checkpoints each step and reads the state back on replay.
  # Lambda authorizes these against the execution ARN, which always carries a version
  # qualifier ("function:name:7/durable-execution/..."), hence the ":*" suffix.
  statement {
    sid       = "DurableExecutionCheckpoints"
    actions   = ["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]
    resources = ["${local.orchestrator_function_arn}:*"]
  }

  # A scheduled run re-lists the feed's last restatement_window_days days; a day the vendor
  # restated gets a run of its own, which the run starts as the scheduler starts one: an
  # asynchronous Invoke of the live alias (a durable function starts from a qualified ARN
  # only), never of another version or function.
  statement {
    sid       = "StartRestatedDays"
    actions   = ["lambda:InvokeFunction"]
    resources = [local.orchestrator_live_alias_arn]
  }

  statement {
    sid = "TrackBatchesAndJobs"
    actions = [
      "dynamodb:GetItem",
      "dynamodb:BatchGetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
      "dynamodb:Query",
    ]
    resources = [
      aws_dynamodb_table.jobs.arn,
      aws_dynamodb_table.batches.arn,
      "${aws_dynamodb_table.batches.arn}/index/*",
      # Completion checks COUNT the batch's jobs by status here, every shard.
      "${aws_dynamodb_table.jobs.arn}/index/BatchIndex",
      # The sweeper's candidates: the deployment's stale pending jobs, every shard, filtered
      # to the batch by the BatchID this index carries.
      "${aws_dynamodb_table.jobs.arn}/index/StatusIndex",
    ]
  }

  # GetQueueAttributes: the sweeper re-sends idle jobs only when the queue's visible backlog
  # is smaller than them (they may just be waiting in line). A named feed's files go to its
  # own queue (sqs.tf), with the same checks.
  statement {
    sid       = "QueueDownloads"
    actions   = ["sqs:SendMessage", "sqs:GetQueueAttributes"]
    resources = concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)
  }

  # Files above the large-file threshold go to the ECS worker's queue, when it exists.
  dynamic "statement" {
    for_each = length(aws_sqs_queue.downloads_large) > 0 ? [1] : []

    content {
      sid       = "QueueLargeDownloads"
      actions   = ["sqs:SendMessage"]
      resources = aws_sqs_queue.downloads_large[*].arn
    }
  }

  # The hand-off events (events.tf): the orchestrator alone puts them, on the one bus.
  statement {
    sid       = "PublishHandoffEvents"
    actions   = ["events:PutEvents"]
    resources = [local.event_bus_arn]
  }

  # Lambda sends the events of executions that failed for good to the function's DLQ with
  # the function's own role.
  statement {
    sid       = "FunctionDeadLetterQueue"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.orchestrator_dlq.arn]
  }

  # The default feed's token and each named feed's (the listing); never a key.
  statement {
    sid     = "ReadProviderToken"
    actions = ["secretsmanager:GetSecretValue"]
    resources = distinct(concat(
      [aws_secretsmanager_secret.provider_token.arn], local.feed_token_secret_arn_list,
    ))
  }

  # Each named feed's settings, one parameter per feed under the feeds' path.
  dynamic "statement" {
    for_each = length(var.feeds) > 0 ? ["feeds"] : []

    content {
      sid       = "ReadFeedSettings"
      actions   = ["ssm:GetParameter"]
      resources = local.feed_parameter_arn_patterns
    }
  }

  # The default feed's day lists the named feeds to refuse entities named like their prefixes
  # (dlpipe/services/orchestrator/root_guard.py): the path's own ARN.
  dynamic "statement" {
    for_each = length(var.feeds) > 0 ? ["feeds"] : []

    content {
      sid       = "ListFeeds"
      actions   = ["ssm:GetParametersByPath"]
      resources = ["arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:parameter${local.feeds_parameter_path}"]
    }
  }

  # The sweeper finishes a job whose worker died after publishing: it HEADs the deterministic
  # destination key (sha256 metadata, size). ListBucket turns a missing key's 403 into a 404.
  statement {
    sid       = "FindPublishedFiles"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.destination.arn}/*"]
  }

  # write-manifest: the day manifests and their latest.json pointers, under their own prefix
  # only (multipart parts are s3:PutObject too); reading them back is FindPublishedFiles.
  statement {
    sid       = "WriteDayManifests"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${aws_s3_bucket.destination.arn}/_dlpipe/manifests/*"]
  }

  statement {
    sid       = "TellMissingFromForbidden"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.destination.arn]
  }

  # A restated file's revision the sweeper finishes records the version it replaced, as the
  # worker would: the key's versions, listed (ListObjectVersions is s3:ListBucketVersions).
  statement {
    sid       = "FindReplacedVersions"
    actions   = ["s3:ListBucketVersions"]
    resources = [aws_s3_bucket.destination.arn]
  }

  # Only SQS (the download queue, the function's DLQ), Secrets Manager, DynamoDB and S3 (a
  # HEAD of an SSE-KMS object) use the key for this role; the code never calls KMS itself.
  statement {
    sid       = "UseDataKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.dlpipe.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values = [
        "sqs.${var.aws_region}.amazonaws.com",
        "secretsmanager.${var.aws_region}.amazonaws.com",
        "dynamodb.${var.aws_region}.amazonaws.com",
        "s3.${var.aws_region}.amazonaws.com",
      ]
    }
  }

  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.orchestrator.arn}:*"]
  }

  # X-Ray has no resource-level permissions: AWS requires "*" for these two actions.
  statement {
    sid       = "XRayTraces"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }
}

# --- downloader (Lambda) and worker (ECS task role): the same code, so one shared document ---

# What the downloader's code calls, wherever it runs (downloader Lambda, `dlpipe worker` on ECS).
data "aws_iam_policy_document" "downloader_code" {
  # Read a job, claim it, extend the lease, record the outcome. No Query, no Scan.
  statement {
    sid       = "ClaimAndCompleteJobs"
    actions   = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn]
  }

  # ChangeMessageVisibility lets a long download keep its message; SendMessage replaces a copy
  # that met another worker's live claim with a fresh one, delayed until that claim ends. The
  # same on each named feed's own queue, whose messages a downloader keeps and defers alike.
  statement {
    sid       = "KeepAndDeferDownloads"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:SendMessage"]
    resources = concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)
  }

  # A delayed copy of a large file's message goes back to the large-file queue (download_queue.py).
  dynamic "statement" {
    for_each = length(aws_sqs_queue.downloads_large) > 0 ? [1] : []

    content {
      sid       = "CopyToLargeDownloads"
      actions   = ["sqs:SendMessage"]
      resources = aws_sqs_queue.downloads_large[*].arn
    }
  }

  # CreateMultipartUpload, UploadPart and CompleteMultipartUpload are all s3:PutObject;
  # HeadObject (is the verified file there already? what does a revision replace?) is
  # s3:GetObject, as the read back of an object without our SHA-256 metadata.
  statement {
    sid       = "StoreFiles"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject"]
    resources = ["${aws_s3_bucket.destination.arn}/*"]
  }

  # ListBucket turns HeadObject's "forbidden" for a missing key into a plain 404;
  # ListBucketMultipartUploads finds a dead worker's stale uploads of the same key to abort;
  # ListBucketVersions finds the version a restated file's revision, published by another
  # worker first, replaced (the completion records it).
  statement {
    sid       = "FindObjectsAndStaleUploads"
    actions   = ["s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:ListBucketVersions"]
    resources = [aws_s3_bucket.destination.arn]
  }

  # The default feed's key (decrypt) and token (refresh expired URLs), and each named feed's;
  # a job is decrypted only with its own feed's key. A shared key is listed once.
  statement {
    sid     = "ReadKeyAndToken"
    actions = ["secretsmanager:GetSecretValue"]
    resources = distinct(concat(
      [aws_secretsmanager_secret.rsa_private_key.arn, aws_secretsmanager_secret.provider_token.arn],
      local.feed_private_key_secret_arn_list,
      local.feed_token_secret_arn_list,
    ))
  }

  # Each named feed's settings, one parameter per feed under the feeds' path.
  dynamic "statement" {
    for_each = length(var.feeds) > 0 ? ["feeds"] : []

    content {
      sid       = "ReadFeedSettings"
      actions   = ["ssm:GetParameter"]
      resources = local.feed_parameter_arn_patterns
    }
  }

  # Only the services this code calls use the key for it: S3 (parts, completing an upload),
  # SQS (messages), Secrets Manager (secrets) and DynamoDB (the jobs table).
  statement {
    sid       = "UseDataKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.dlpipe.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values = [
        "s3.${var.aws_region}.amazonaws.com",
        "sqs.${var.aws_region}.amazonaws.com",
        "secretsmanager.${var.aws_region}.amazonaws.com",
        "dynamodb.${var.aws_region}.amazonaws.com",
      ]
    }
  }
}

resource "aws_iam_role" "downloader" {
  name               = "${var.name_prefix}dlpipe-downloader"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "downloader" {
  name   = "dlpipe-downloader"
  role   = aws_iam_role.downloader.id
  policy = data.aws_iam_policy_document.downloader.json
}

# The downloader Lambda: the code's permissions, plus what Lambda itself does with the role.
data "aws_iam_policy_document" "downloader" {
  source_policy_documents = [data.aws_iam_policy_document.downloader_code.json]

  # The SQS event source polls the queue, and deletes handled messages, with the function's role.
  # Each named feed's queue has its own event source mapping (lambda_downloader.tf), which
  # polls and deletes with this role alike.
  statement {
    sid       = "EventSourceConsumesDownloads"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
    resources = concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)
  }

  # Without DLPIPE_QUEUE_URL the handler finds the URL of a record's queue from its ARN.
  statement {
    sid       = "FindDownloadQueue"
    actions   = ["sqs:GetQueueUrl"]
    resources = concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)
  }

  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.downloader.arn}:*"]
  }

  # X-Ray has no resource-level permissions: AWS requires "*" for these two actions.
  statement {
    sid       = "XRayTraces"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }
}

# --- scheduler -------------------------------------------------------------------------------

resource "aws_iam_role" "scheduler" {
  name               = "${var.name_prefix}dlpipe-scheduler"
  assume_role_policy = data.aws_iam_policy_document.scheduler_assume.json
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "dlpipe-scheduler"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}

data "aws_iam_policy_document" "scheduler" {
  # Only the alias: a durable function can be started by a qualified ARN only, and the
  # alias is what a rollback moves.
  statement {
    sid       = "StartOrchestrator"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_alias.orchestrator_live.arn]
  }

  # Scheduler delivers undeliverable events to its DLQ with this role.
  statement {
    sid       = "ScheduleDeadLetterQueue"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.schedule_dlq.arn]
  }

  # The schedule and its DLQ are encrypted with the dlpipe key.
  statement {
    sid       = "UseDataKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.dlpipe.arn]
  }
}
