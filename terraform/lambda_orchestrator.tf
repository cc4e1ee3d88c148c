# The orchestrator: a durable Lambda function. Each invocation replays the execution from its
# checkpoints and runs the next step; the waits between completion checks cost no compute.
# Durability can only be chosen when the function is created: removing durable_config
# later forces a new function.

resource "aws_cloudwatch_log_group" "orchestrator" {
  name              = "/aws/lambda/${local.orchestrator_function_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.dlpipe.arn
}

# The sizing model (dlpipe/domain/sizing.py holds the same figures; a test holds the two to each
# other). Lambda gives CPU in proportion to memory, one vCPU at 1,769 MB, and the steps are
# single-threaded. A step's time is its CPU per file measured on one core (BENCHMARKS.md) times
# the files, stretched by that share. write-manifest runs in one invocation and may take half
# of it (the replay before it and its AWS calls' latency take the rest); the fan-out's chunks
# span invocations and must fit durable_setup_margin_seconds; the manifest's spool may take
# 2/3 of /tmp.
locals {
  lambda_mb_per_vcpu                = 1769
  manifest_cpu_ms_per_file          = 2.53
  fanout_cpu_ms_per_file            = 3.8
  manifest_spool_bytes_per_file     = 1400
  orchestrator_vcpu_share           = min(var.orchestrator_memory_mb, local.lambda_mb_per_vcpu) / local.lambda_mb_per_vcpu
  manifest_step_seconds             = ceil(var.largest_day_files * local.manifest_cpu_ms_per_file / 1000 / local.orchestrator_vcpu_share)
  manifest_step_limit_seconds       = var.orchestrator_timeout_seconds * 0.5
  manifest_step_minimum_memory_mb   = ceil(var.largest_day_files * local.manifest_cpu_ms_per_file / 1000 * local.lambda_mb_per_vcpu / local.manifest_step_limit_seconds)
  manifest_step_largest_day_files   = floor(local.manifest_step_limit_seconds * 1000 / local.manifest_cpu_ms_per_file)
  fanout_seconds                    = ceil(var.largest_day_files * local.fanout_cpu_ms_per_file / 1000 / local.orchestrator_vcpu_share)
  manifest_spool_mb                 = ceil(var.largest_day_files * local.manifest_spool_bytes_per_file / 1048576)
  orchestrator_ephemeral_minimum_mb = max(512, ceil(local.manifest_spool_mb * 3 / 2))
}

resource "aws_lambda_function" "orchestrator" {
  #checkov:skip=CKV_AWS_117:No VPC: the function talks only to AWS APIs and the provider's public HTTPS API; a VPC would add NAT cost and no protection, since every call is IAM-authorized and TLS-encrypted.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile and a signing step in the release pipeline, which dlpipe does not have yet; the package is built from this repository by `make package` and its hash is pinned by source_code_hash.
  function_name = local.orchestrator_function_name
  description   = "dlpipe daily orchestrator (durable): create the batch, queue the files, poll until done."
  role          = aws_iam_role.orchestrator.arn
  runtime       = local.lambda_runtime
  handler       = "orchestrator.handler.handler"
  architectures = ["x86_64"]

  filename         = var.lambda_package_path
  source_code_hash = filebase64sha256(var.lambda_package_path)

  # Every apply that changes the code publishes a version; the "live" alias points at it.
  publish = true

  timeout                        = var.orchestrator_timeout_seconds
  memory_size                    = var.orchestrator_memory_mb
  reserved_concurrent_executions = var.reserve_lambda_concurrency ? var.orchestrator_reserved_concurrency : null
  kms_key_arn                    = aws_kms_key.dlpipe.arn

  ephemeral_storage {
    size = var.orchestrator_ephemeral_storage_mb
  }

  durable_config {
    execution_timeout = var.durable_execution_timeout_seconds
    retention_period  = var.durable_retention_days
  }

  # Executions that fail for good leave their event here (see the alarm on it).
  dead_letter_config {
    target_arn = aws_sqs_queue.orchestrator_dlq.arn
  }

  environment {
    variables = merge(local.orchestrator_environment, local.large_file_environment, local.handoff_environment, {
      DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS = tostring(var.provider_outage_budget_seconds)
      DLPIPE_AWS_OUTAGE_BUDGET_SECONDS      = tostring(var.aws_outage_budget_seconds)
    })
  }

  tracing_config {
    mode = "Active"
  }

  # Text, not JSON: the code already writes JSON lines (structlog) and EMF metric objects,
  # which CloudWatch must see unwrapped to extract the metrics.
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.orchestrator.name
  }

  lifecycle {
    precondition {
      condition     = var.poll_interval_seconds * var.max_polls + var.provider_outage_budget_seconds + var.aws_outage_budget_seconds + var.durable_setup_margin_seconds <= var.durable_execution_timeout_seconds
      error_message = "poll_interval_seconds * max_polls + provider_outage_budget_seconds + aws_outage_budget_seconds + durable_setup_margin_seconds must not exceed durable_execution_timeout_seconds, or a day that waits out a provider or an SQS / DynamoDB outage times out before the orchestrator can mark its batch failed or timed out."
    }

    precondition {
      condition     = local.manifest_step_seconds <= local.manifest_step_limit_seconds
      error_message = "orchestrator_memory_mb ${var.orchestrator_memory_mb}: the write-manifest step of a largest_day_files ${var.largest_day_files} day is modelled at ${local.manifest_step_seconds} s, over ${local.manifest_step_limit_seconds} s (half of orchestrator_timeout_seconds ${var.orchestrator_timeout_seconds}, Lambda's limit of one invocation being 900 s); ${local.manifest_step_minimum_memory_mb <= local.lambda_mb_per_vcpu ? "it needs orchestrator_memory_mb ${local.manifest_step_minimum_memory_mb} or more" : "no memory makes it fit, the step being single-threaded (one vCPU at ${local.lambda_mb_per_vcpu} MB): lower largest_day_files to ${local.manifest_step_largest_day_files} or fewer"}."
    }

    precondition {
      condition     = var.orchestrator_ephemeral_storage_mb >= local.orchestrator_ephemeral_minimum_mb
      error_message = "orchestrator_ephemeral_storage_mb ${var.orchestrator_ephemeral_storage_mb}: the write-manifest step of a largest_day_files ${var.largest_day_files} day spools about ${local.manifest_spool_mb} MB in /tmp; it needs orchestrator_ephemeral_storage_mb ${local.orchestrator_ephemeral_minimum_mb} or more (Lambda's maximum is 10240)."
    }

    precondition {
      condition     = local.fanout_seconds <= var.durable_setup_margin_seconds
      error_message = "durable_setup_margin_seconds ${var.durable_setup_margin_seconds}: the fan-out of a largest_day_files ${var.largest_day_files} day is modelled at ${local.fanout_seconds} s at orchestrator_memory_mb ${var.orchestrator_memory_mb}; raise the margin (and durable_execution_timeout_seconds with it) or the memory."
    }

    # The same budget for each named feed's day, with its own polling overrides.
    precondition {
      condition     = length(local.feeds_past_execution_timeout) == 0
      error_message = "feeds ${join(", ", local.feeds_past_execution_timeout)}: poll_interval_seconds * max_polls (the feed's, else the deployment's) + provider_outage_budget_seconds + aws_outage_budget_seconds + durable_setup_margin_seconds must not exceed durable_execution_timeout_seconds, or the feed's day times out before the orchestrator can mark its batch failed or timed out."
    }
  }

  depends_on = [aws_iam_role_policy.orchestrator]
}

# A durable function can only be invoked by a qualified ARN. The schedule and operators use
# this alias; rolling back means pointing it at an older version (orchestrator_live_version).
# Executions already running stay on the version they started with.
resource "aws_lambda_alias" "orchestrator_live" {
  name             = "live"
  description      = "The orchestrator version the daily schedule starts."
  function_name    = aws_lambda_function.orchestrator.function_name
  function_version = coalesce(var.orchestrator_live_version, aws_lambda_function.orchestrator.version)
}
