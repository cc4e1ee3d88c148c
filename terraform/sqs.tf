# The download queue carries one FileID per message from the orchestrator to the downloaders.
# Local provisioning (dlpipe local provision) reads these queues from here as well.

resource "aws_sqs_queue" "downloads" {
  name                       = "${var.name_prefix}dlpipe-downloads"
  visibility_timeout_seconds = local.queue_visibility_timeout_seconds
  message_retention_seconds  = 345600 # 4 days: a file not downloaded by then needs an operator
  receive_wait_time_seconds  = 20     # long polling for the ECS worker; the event source polls anyway

  kms_master_key_id = aws_kms_key.dlpipe.arn
  # One KMS data key serves an hour of messages, which keeps KMS requests (and cost) small.
  kms_data_key_reuse_period_seconds = 3600

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.downloads_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

# One download queue per named feed, keyed by its name: the orchestrator sends a named feed's
# files there (the queue_url of the feed's parameter, feeds.tf), and each queue has its own
# event source mapping (lambda_downloader.tf), so one feed's backlog never holds another's
# files. Settings as the main queue's, and the same dead-letter queue: an SQS DLQ serves
# several source queues, so one DLQ and one alarm cover every feed. The large-file queue stays
# shared by every feed: only the ECS worker consumes it, with its own threads.
resource "aws_sqs_queue" "feed_downloads" {
  for_each = var.feeds

  name                       = "${var.name_prefix}dlpipe-downloads-feed-${each.key}"
  visibility_timeout_seconds = local.queue_visibility_timeout_seconds
  message_retention_seconds  = 345600
  receive_wait_time_seconds  = 20

  kms_master_key_id                 = aws_kms_key.dlpipe.arn
  kms_data_key_reuse_period_seconds = 3600

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.downloads_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_sqs_queue" "downloads_dlq" {
  name                              = "${var.name_prefix}dlpipe-downloads-dlq"
  message_retention_seconds         = 1209600 # 14 days, the SQS maximum: time to redrive
  kms_master_key_id                 = aws_kms_key.dlpipe.arn
  kms_data_key_reuse_period_seconds = 3600
}

# Files above the large-file threshold (dlpipe/domain/routing.py), consumed only by the ECS worker,
# which has no time limit. It exists only with the worker (var.enable_ecs_worker); without it
# every file goes to the main queue and the downloader Lambda's timeout is the limit.
# It shares the download DLQ: a dead job message is redriven by `dlpipe dlq redrive` to the
# queue its size routes it to, so one DLQ, one alarm and one command cover both queues.
resource "aws_sqs_queue" "downloads_large" {
  count                      = local.ecs_worker_count
  name                       = "${var.name_prefix}dlpipe-downloads-large"
  visibility_timeout_seconds = local.queue_visibility_timeout_seconds # the worker extends it
  message_retention_seconds  = 345600
  receive_wait_time_seconds  = 20

  kms_master_key_id                 = aws_kms_key.dlpipe.arn
  kms_data_key_reuse_period_seconds = 3600

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.downloads_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

# Only the download queues may use the DLQ as their dead-letter target. SQS takes at most 10
# source ARNs in a byQueue policy; with more (eight or nine named feeds) any queue of this
# account and region may name it, which is as far as a DLQ reaches anyway (a queue's DLQ must
# be in its own account and region).
locals {
  download_dlq_sources = concat(
    [aws_sqs_queue.downloads.arn],
    aws_sqs_queue.downloads_large[*].arn,
    [for name in sort(keys(var.feeds)) : aws_sqs_queue.feed_downloads[name].arn],
  )
}

resource "aws_sqs_queue_redrive_allow_policy" "downloads_dlq" {
  queue_url = aws_sqs_queue.downloads_dlq.id

  redrive_allow_policy = jsonencode(merge(
    { redrivePermission = length(local.download_dlq_sources) <= 10 ? "byQueue" : "allowAll" },
    { for name, arns in { sourceQueueArns = local.download_dlq_sources } : name => arns if length(arns) <= 10 },
  ))
}

# Scheduled events that EventBridge Scheduler could not deliver to the orchestrator.
resource "aws_sqs_queue" "schedule_dlq" {
  name                              = "${var.name_prefix}dlpipe-schedule-dlq"
  message_retention_seconds         = 1209600
  kms_master_key_id                 = aws_kms_key.dlpipe.arn
  kms_data_key_reuse_period_seconds = 3600
}

# Events of orchestrator executions that failed for good (the durable function's DLQ).
resource "aws_sqs_queue" "orchestrator_dlq" {
  name                              = "${var.name_prefix}dlpipe-orchestrator-dlq"
  message_retention_seconds         = 1209600
  kms_master_key_id                 = aws_kms_key.dlpipe.arn
  kms_data_key_reuse_period_seconds = 3600
}
