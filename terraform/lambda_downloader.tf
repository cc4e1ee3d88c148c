# The downloader: one SQS message (one FileID) per invocation by default. It claims the job,
# streams the file from the provider through decryption into a multipart upload, and
# reports partial batch failures so that only failed messages come back.
#
# Sizing: memory_size 1024 MB by default because Lambda allots CPU and network bandwidth in
# proportion to memory (1,769 MB = one vCPU); the file is streamed, so memory holds only a
# few multipart parts (8-16 MiB each) plus the runtime. /tmp stays at the 512 MB minimum for
# the same reason. Files that need more than 15 minutes belong on the ECS worker.

resource "aws_cloudwatch_log_group" "downloader" {
  name              = "/aws/lambda/${local.downloader_function_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.dlpipe.arn
}

resource "aws_lambda_function" "downloader" {
  #checkov:skip=CKV_AWS_117:No VPC: the function talks only to AWS APIs and to the presigned S3 URLs and API of the provider; a VPC would add NAT cost and no protection, since every call is IAM-authorized and TLS-encrypted.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile and a signing step in the release pipeline, which dlpipe does not have yet; the package is built from this repository by `make package` and its hash is pinned by source_code_hash.
  #checkov:skip=CKV_AWS_116:A function DLQ only catches asynchronous invocations; this one is invoked by the SQS event source, whose failed messages go to the download queue's redrive DLQ (aws_sqs_queue.downloads_dlq, alarmed).
  function_name = local.downloader_function_name
  description   = "dlpipe downloader: claim a file, download, decrypt, upload to S3, record the outcome."
  role          = aws_iam_role.downloader.arn
  runtime       = local.lambda_runtime
  handler       = "downloader.handler.handler"
  architectures = ["x86_64"]

  filename         = var.lambda_package_path
  source_code_hash = filebase64sha256(var.lambda_package_path)

  timeout     = var.downloader_timeout_seconds
  memory_size = var.downloader_memory_mb
  # Opt-in (reserve_lambda_concurrency): what every event source mapping may run at once, added
  # up, so that neither other functions nor the mappings themselves throttle its polling
  # (a throttled batch counts as a receive toward the DLQ).
  reserved_concurrent_executions = var.reserve_lambda_concurrency ? local.downloader_mappings_concurrency : null
  kms_key_arn                    = aws_kms_key.dlpipe.arn

  ephemeral_storage {
    size = var.downloader_ephemeral_storage_mb
  }

  environment {
    variables = merge(local.downloader_environment, local.large_file_environment)
  }

  tracing_config {
    mode = "Active"
  }

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.downloader.name
  }

  lifecycle {
    precondition {
      condition     = !var.reserve_lambda_concurrency || local.lambda_reserved_concurrency <= var.lambda_account_concurrency_limit - local.lambda_unreserved_minimum
      error_message = "reserve_lambda_concurrency: the downloader's event source mappings run up to ${local.downloader_mappings_concurrency} at once (${join(" + ", [for name, cap in local.downloader_mapping_concurrency : "${name} ${cap}"])}) and the orchestrator reserves ${var.orchestrator_reserved_concurrency}: ${local.lambda_reserved_concurrency} reserved exceeds ${var.lambda_account_concurrency_limit - local.lambda_unreserved_minimum}, the account's lambda_account_concurrency_limit ${var.lambda_account_concurrency_limit} less the ${local.lambda_unreserved_minimum} unreserved executions Lambda keeps. Lower downloader_max_concurrency or the shares, or raise the quota and lambda_account_concurrency_limit."
    }

    precondition {
      condition     = var.lease_seconds <= var.downloader_timeout_seconds * 6
      error_message = "lease_seconds should not exceed the queue's visibility timeout (six times downloader_timeout_seconds): a redelivered message would find the file still leased."
    }
  }

  depends_on = [aws_iam_role_policy.downloader]
}

# One event source mapping per download queue: the default feed's (the main queue) and one per
# named feed (its own queue, sqs.tf). A queue with its own mapping is the AWS-native bulkhead:
# each mapping polls only its queue, up to its maximum_concurrency, so a feed with a large
# backlog holds at most its share of the downloaders and never delays another feed's files,
# and fairness between feeds needs no coordination. Alone (feeds = {}), the default feed holds
# them all; with named feeds it holds feed_max_share_percent of them, as a named feed without
# its own max_share_percent does (feeds.tf: local.feed_max_concurrency; at least 2, the
# mapping's minimum).
#
# The rule of what the downloader may run at once: the mappings' caps are each feed's share
# and may add up to more than downloader_max_concurrency (an idle feed's share is not lost to
# the busy ones). A reservation, when on, is their sum: a reservation below it would let the
# mappings throttle each other, and AWS counts each throttled batch as a receive. Reserving
# the sum rather than scaling the caps down keeps every feed's cap, and so its isolation, the
# same with or without a reservation (terraform/README.md, "Reserved concurrency").
locals {
  default_feed_max_concurrency = length(var.feeds) > 0 ? max(2, floor(var.downloader_max_concurrency * var.feed_max_share_percent / 100)) : var.downloader_max_concurrency

  # Every event source mapping's maximum_concurrency, by feed ("default": the main queue's).
  downloader_mapping_concurrency  = merge({ default = local.default_feed_max_concurrency }, local.feed_max_concurrency)
  downloader_mappings_concurrency = sum(values(local.downloader_mapping_concurrency))

  # Lambda refuses a reservation that leaves the account fewer unreserved executions than this.
  lambda_unreserved_minimum   = 100
  lambda_reserved_concurrency = local.downloader_mappings_concurrency + var.orchestrator_reserved_concurrency
}

resource "aws_lambda_event_source_mapping" "downloads" {
  event_source_arn = aws_sqs_queue.downloads.arn
  function_name    = aws_lambda_function.downloader.arn
  batch_size       = var.downloader_batch_size
  # Only failed messages return to the queue; the rest of the batch is deleted.
  function_response_types = ["ReportBatchItemFailures"]

  scaling_config {
    maximum_concurrency = local.downloader_mapping_concurrency["default"]
  }

  # Creating the mapping checks that the role may receive from the queue.
  depends_on = [aws_iam_role_policy.downloader]
}

resource "aws_lambda_event_source_mapping" "feed_downloads" {
  for_each = var.feeds

  event_source_arn        = aws_sqs_queue.feed_downloads[each.key].arn
  function_name           = aws_lambda_function.downloader.arn
  batch_size              = var.downloader_batch_size
  function_response_types = ["ReportBatchItemFailures"]

  scaling_config {
    maximum_concurrency = local.downloader_mapping_concurrency[each.key]
  }

  depends_on = [aws_iam_role_policy.downloader]
}
