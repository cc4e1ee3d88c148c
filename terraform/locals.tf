locals {
  is_prod = var.environment == "prod"

  jobs_table_name    = "${var.name_prefix}data-download-jobs"
  batches_table_name = "${var.name_prefix}data-download-batches"

  account_id = data.aws_caller_identity.current.account_id
  partition  = data.aws_partition.current.partition

  orchestrator_function_name = "${var.name_prefix}dlpipe-orchestrator"
  downloader_function_name   = "${var.name_prefix}dlpipe-downloader"

  # Built from the name rather than taken from the resource, so that the role's policy can
  # exist before the function does (the first invocation already needs it).
  orchestrator_function_arn = "arn:${local.partition}:lambda:${var.aws_region}:${local.account_id}:function:${local.orchestrator_function_name}"
  # The "live" alias's ARN (aws_lambda_alias.orchestrator_live), built from the names too: the
  # function depends on its role's policy, so the policy cannot name the alias resource,
  # which depends on the function (tests/iam/test_policies.py holds the two ARNs equal).
  orchestrator_live_alias_arn = "arn:${local.partition}:lambda:${data.aws_region.current.region}:${local.account_id}:function:${local.orchestrator_function_name}:live"

  # Lambda's guidance for SQS event sources: visibility timeout at least six times the
  # function timeout, so that a message the poller has fetched but could not yet hand to a
  # throttled function does not reappear and get processed twice. A worker that dies keeps
  # its message hidden this long; the lease in DynamoDB lets another worker take the file
  # over as soon as the message reappears.
  queue_visibility_timeout_seconds = var.downloader_timeout_seconds * 6

  # Namespace of the EMF metrics the orchestrator logs (BatchTimedOut, BatchFailed, StuckJobs),
  # dlpipe/metrics.py's NAMESPACE. Each is published with no dimensions and by Feed, which is
  # what the alarms watch: never set POWERTOOLS_SERVICE_NAME on the functions, it would add a
  # "service" dimension to every set.
  metric_namespace = "dlpipe"

  # Lambda runtime shared by both functions; scripts/package_lambda.py builds for it.
  lambda_runtime = "python3.13"

  orchestrator_environment = merge({
    DLPIPE_JOBS_TABLE              = aws_dynamodb_table.jobs.name
    DLPIPE_BATCHES_TABLE           = aws_dynamodb_table.batches.name
    DLPIPE_QUEUE_URL               = aws_sqs_queue.downloads.url
    DLPIPE_DLQ_URL                 = aws_sqs_queue.downloads_dlq.url
    DLPIPE_PROVIDER_URL            = var.provider_base_url
    DLPIPE_PROVIDER_TOKEN_SECRET   = aws_secretsmanager_secret.provider_token.arn
    DLPIPE_POLL_INTERVAL_SECONDS   = tostring(var.poll_interval_seconds)
    DLPIPE_MAX_POLLS               = tostring(var.max_polls)
    DLPIPE_DATE_OFFSET_DAYS        = tostring(var.date_offset_days)
    DLPIPE_RESTATEMENT_WINDOW_DAYS = tostring(var.restatement_window_days)
    DLPIPE_SWEEP_REQUEUE           = tostring(var.sweep_requeue)
    DLPIPE_RESEND_AFTER_SECONDS    = tostring(var.resend_after_seconds)
    DLPIPE_LOG_LEVEL               = var.log_level
    # The sweeper: HEAD of a dead worker's destination key, and the lease in its recovery bound.
    DLPIPE_DEST_BUCKET   = aws_s3_bucket.destination.bucket
    DLPIPE_LEASE_SECONDS = tostring(var.lease_seconds)
  }, local.feeds_environment)

  # Files a downloader Lambda surely finishes: timeout x 20 MiB/s (a conservative minimum,
  # below every throughput BENCHMARKS.md measured) x 1/2 (safety), as dlpipe/domain/routing.py
  # computes its default; 10485760 = 20 MiB/s x 1/2 in bytes. Larger files go to the ECS
  # worker's queue. Without the worker there is no large queue and no threshold at all.
  large_file_threshold_bytes = var.downloader_timeout_seconds * 10485760
  large_file_environment = {
    for name, value in {
      DLPIPE_LARGE_QUEUE_URL            = one(aws_sqs_queue.downloads_large[*].url)
      DLPIPE_LARGE_FILE_THRESHOLD_BYTES = tostring(local.large_file_threshold_bytes)
    } : name => value if var.enable_ecs_worker
  }

  # Shared by the downloader Lambda and the optional ECS worker: both run the same code.
  downloader_environment = merge({
    DLPIPE_JOBS_TABLE            = aws_dynamodb_table.jobs.name
    DLPIPE_QUEUE_URL             = aws_sqs_queue.downloads.url
    DLPIPE_DEST_BUCKET           = aws_s3_bucket.destination.bucket
    DLPIPE_PRIVATE_KEY_SECRET    = aws_secretsmanager_secret.rsa_private_key.arn
    DLPIPE_PROVIDER_URL          = var.provider_base_url
    DLPIPE_PROVIDER_TOKEN_SECRET = aws_secretsmanager_secret.provider_token.arn
    DLPIPE_LEASE_SECONDS         = tostring(var.lease_seconds)
    DLPIPE_LOG_LEVEL             = var.log_level
  }, local.feeds_environment, local.downloaders_feeds_environment)
}
