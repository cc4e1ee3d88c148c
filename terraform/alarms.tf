# What an operator must hear about: messages in a dead-letter queue, batches that timed out or
# failed, jobs stuck in `downloading`, and orchestrator executions that failed. Every alarm's
# description ends with a link to the dashboard (dashboard.tf).

resource "aws_sns_topic" "alarms" {
  name              = "${var.name_prefix}dlpipe-alarms"
  kms_master_key_id = aws_kms_key.dlpipe.arn
}

resource "aws_sns_topic_subscription" "alarm_email" {
  count     = var.alarm_email == "" ? 0 : 1
  topic_arn = aws_sns_topic.alarms.arn
  protocol  = "email"
  endpoint  = var.alarm_email
}

locals {
  dead_letter_queues = {
    downloads    = aws_sqs_queue.downloads_dlq.name
    schedule     = aws_sqs_queue.schedule_dlq.name
    orchestrator = aws_sqs_queue.orchestrator_dlq.name
  }

  # EMF metrics the orchestrator logs in namespace local.metric_namespace, each published
  # with no dimensions (every feed's total) and by Feed. The batch alarms are the default
  # feed's (a named feed's are below); stuck jobs are every feed's: the downloaders are shared.
  pipeline_metrics = {
    BatchTimedOut = { statistic = "Sum", dimensions = { Feed = "default" }, description = "A daily batch of the default feed timed out before all its files were done." }
    BatchFailed   = { statistic = "Sum", dimensions = { Feed = "default" }, description = "A daily batch of the default feed failed." }
    StuckJobs     = { statistic = "Maximum", dimensions = {}, description = "Jobs have been `downloading` past their lease, in any feed (dlpipe CLI: stuck jobs)." }
  }
}

resource "aws_cloudwatch_metric_alarm" "dead_letter_queue_not_empty" {
  for_each = local.dead_letter_queues

  alarm_name          = "${var.name_prefix}dlpipe-${each.key}-dlq-not-empty"
  alarm_description   = "Messages are waiting in ${each.value}: inspect them, fix the cause, then redrive. Dashboard: ${local.dashboard_url}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  ok_actions          = [aws_sns_topic.alarms.arn]
}

resource "aws_cloudwatch_metric_alarm" "pipeline" {
  for_each = local.pipeline_metrics

  alarm_name          = "${var.name_prefix}dlpipe-${each.key}"
  alarm_description   = "${each.value.description} Dashboard: ${local.dashboard_url}"
  namespace           = local.metric_namespace
  metric_name         = each.key
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
}

# Lambda's own metrics for durable executions, per function.
resource "aws_cloudwatch_metric_alarm" "orchestrator_execution" {
  for_each = toset(["DurableExecutionFailed", "DurableExecutionTimedOut"])

  alarm_name          = "${var.name_prefix}dlpipe-orchestrator-${each.key}"
  alarm_description   = "An orchestrator durable execution ended as ${each.key}: see its execution history in the Lambda console. Dashboard: ${local.dashboard_url}"
  namespace           = "AWS/Lambda"
  metric_name         = each.key
  dimensions          = { FunctionName = aws_lambda_function.orchestrator.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
}

# Many downloader errors in a row usually mean a broken key, token or provider outage.
resource "aws_cloudwatch_metric_alarm" "downloader_errors" {
  alarm_name          = "${var.name_prefix}dlpipe-downloader-errors"
  alarm_description   = "The downloader failed invocations in three consecutive 5-minute periods. Dashboard: ${local.dashboard_url}"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.downloader.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 3
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
}

# --- per named feed: its batch alarms ---------------------------------------------------------
# The default feed's are aws_cloudwatch_metric_alarm.pipeline's BatchFailed and BatchTimedOut;
# each named feed gets the same two on its own Feed dimension, keyed by its name, so adding or
# removing a feed creates or destroys only its own.

resource "aws_cloudwatch_metric_alarm" "feed_batch_failed" {
  for_each = var.feeds

  alarm_name          = "${var.name_prefix}dlpipe-feed-${each.key}-BatchFailed"
  alarm_description   = "Feed ${each.key}: a daily batch failed (dlpipe batch show: its outcome says why). Dashboard: ${local.dashboard_url}"
  namespace           = local.metric_namespace
  metric_name         = "BatchFailed"
  dimensions          = { Feed = each.key }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
}

resource "aws_cloudwatch_metric_alarm" "feed_batch_timed_out" {
  for_each = var.feeds

  alarm_name          = "${var.name_prefix}dlpipe-feed-${each.key}-BatchTimedOut"
  alarm_description   = "Feed ${each.key}: a daily batch timed out before all its files were done. Dashboard: ${local.dashboard_url}"
  namespace           = local.metric_namespace
  metric_name         = "BatchTimedOut"
  dimensions          = { Feed = each.key }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
}

# --- per named feed: its download queue ------------------------------------------------------
# A message of the feed's own queue (sqs.tf) that nobody has taken for this long: its event
# source mapping is off, its share is too small for its day, or its downloads keep failing
# and coming back. Keyed by the feed's name, like the batch alarms.

resource "aws_cloudwatch_metric_alarm" "feed_queue_oldest_message" {
  for_each = var.feeds

  alarm_name          = "${var.name_prefix}dlpipe-feed-${each.key}-queue-oldest-message"
  alarm_description   = "Feed ${each.key}: a message has waited in its download queue ${aws_sqs_queue.feed_downloads[each.key].name} longer than ${var.feed_queue_oldest_age_alarm_seconds} s (is its event source mapping on, its share large enough, its provider answering?). Dashboard: ${local.dashboard_url}"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.feed_downloads[each.key].name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.feed_queue_oldest_age_alarm_seconds
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  ok_actions          = [aws_sns_topic.alarms.arn]
}
