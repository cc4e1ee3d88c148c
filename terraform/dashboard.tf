# The operators' dashboard: the last day's batches, files by outcome and error code,
# throughput, the dead-letter queues, stuck jobs and failed orchestrator executions, then one
# row per feed. Every alarm's description links here (alarms.tf). Each dlpipe metric below is
# one the code emits, under the dimensions graphed: dlpipe/metrics.py's CATALOG, checked by
# tests/infra/test_dashboard.py. The fixed widgets' metric entries are written out one by one
# (no `for`), so that the test can read every one of them; the per-feed rows are rendered by
# terraform for their test.

locals {
  dashboard_name = "${var.name_prefix}dlpipe"
  # The console of the commercial partition; the alarm descriptions carry this link.
  dashboard_url = "https://${var.aws_region}.console.aws.amazon.com/cloudwatch/home?region=${var.aws_region}#dashboards/dashboard/${local.dashboard_name}"

  dashboard_widgets = [
    {
      type   = "text"
      x      = 0
      y      = 0
      width  = 24
      height = 2
      properties = {
        markdown = "## dlpipe\nBatches come from the orchestrator (one line per batch event), files from the downloaders (one EMF document per finished file; Component lambda or worker). Find a file's document in Logs Insights by its FileID property. `dlpipe status` and `dlpipe jobs stuck` give the same facts from DynamoDB."
      }
    },
    {
      type   = "metric"
      x      = 0
      y      = 2
      width  = 24
      height = 4
      properties = {
        title                = "Batches, last 24 hours"
        view                 = "singleValue"
        region               = var.aws_region
        stat                 = "Sum"
        period               = 86400
        start                = "-PT24H"
        setPeriodToTimeRange = true
        metrics = [
          [local.metric_namespace, "FilesExpected", { label = "files expected" }],
          [local.metric_namespace, "FilesQueued", { label = "files queued" }],
          [local.metric_namespace, "FilesRejected", { label = "listing entries rejected" }],
          [local.metric_namespace, "FilesCompleted", { label = "files completed (finished batches)" }],
          [local.metric_namespace, "FilesFailed", { label = "files failed or error (finished batches)" }],
          [local.metric_namespace, "BatchCompleted", { label = "batches completed" }],
          [local.metric_namespace, "BatchFailed", { label = "batches failed" }],
          [local.metric_namespace, "BatchTimedOut", { label = "batches timed out" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 0
      y      = 6
      width  = 12
      height = 6
      properties = {
        title   = "Files by outcome"
        view    = "timeSeries"
        stacked = true
        region  = var.aws_region
        stat    = "Sum"
        period  = 300
        metrics = [
          [local.metric_namespace, "FileDownloads", "Outcome", "completed", { label = "completed", color = "#2ca02c" }],
          [local.metric_namespace, "FileDownloads", "Outcome", "failed", { label = "failed (retries used up)", color = "#ff7f0e" }],
          [local.metric_namespace, "FileDownloads", "Outcome", "error", { label = "error (permanent)", color = "#d62728" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 12
      y      = 6
      width  = 12
      height = 6
      properties = {
        title   = "Unsuccessful files by error code"
        view    = "timeSeries"
        stacked = true
        region  = var.aws_region
        period  = 300
        metrics = [
          [{ id = "by_code", label = "", expression = "SEARCH('{${local.metric_namespace},Outcome,ErrorCode} MetricName=\"FileDownloads\" (Outcome=\"failed\" OR Outcome=\"error\")', 'Sum', 300)" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 0
      y      = 12
      width  = 8
      height = 6
      properties = {
        title  = "Throughput per completed file (bytes/s)"
        view   = "timeSeries"
        region = var.aws_region
        stat   = "Average"
        period = 300
        metrics = [
          [local.metric_namespace, "FileThroughput", "Component", "lambda", "Outcome", "completed", { label = "Lambda" }],
          [local.metric_namespace, "FileThroughput", "Component", "worker", "Outcome", "completed", { label = "ECS worker" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 8
      y      = 12
      width  = 8
      height = 6
      properties = {
        title  = "Bytes published"
        view   = "timeSeries"
        region = var.aws_region
        stat   = "Sum"
        period = 300
        metrics = [
          [local.metric_namespace, "FileBytes", "Component", "lambda", "Outcome", "completed", { label = "Lambda" }],
          [local.metric_namespace, "FileBytes", "Component", "worker", "Outcome", "completed", { label = "ECS worker" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 16
      y      = 12
      width  = 8
      height = 6
      properties = {
        title  = "Seconds per file, claim to outcome"
        view   = "timeSeries"
        region = var.aws_region
        period = 300
        metrics = [
          [local.metric_namespace, "FileDownloadSeconds", "Outcome", "completed", { stat = "p50", label = "completed p50" }],
          [local.metric_namespace, "FileDownloadSeconds", "Outcome", "completed", { stat = "p99", label = "completed p99" }],
          [local.metric_namespace, "FileTransferAttempts", "Outcome", "completed", { stat = "Maximum", label = "transfers per file, max", yAxis = "right" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 0
      y      = 18
      width  = 8
      height = 6
      properties = {
        title  = "Dead-letter queues: messages waiting"
        view   = "timeSeries"
        region = var.aws_region
        stat   = "Maximum"
        period = 300
        metrics = [
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.downloads_dlq.name, { label = "downloads DLQ" }],
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.schedule_dlq.name, { label = "schedule DLQ" }],
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", aws_sqs_queue.orchestrator_dlq.name, { label = "orchestrator DLQ" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 8
      y      = 18
      width  = 8
      height = 6
      properties = {
        title  = "Stuck jobs (sweeper) and the oldest waiting message"
        view   = "timeSeries"
        region = var.aws_region
        stat   = "Maximum"
        period = 300
        metrics = [
          [local.metric_namespace, "StuckJobs", { label = "jobs downloading past their lease" }],
          ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", aws_sqs_queue.downloads.name, { label = "oldest download message (s)", yAxis = "right" }],
        ]
      }
    },
    {
      type   = "metric"
      x      = 16
      y      = 18
      width  = 8
      height = 6
      properties = {
        title  = "Orchestrator: failed durable executions and invocation errors"
        view   = "timeSeries"
        region = var.aws_region
        stat   = "Sum"
        period = 300
        metrics = [
          ["AWS/Lambda", "DurableExecutionFailed", "FunctionName", aws_lambda_function.orchestrator.function_name, { label = "executions failed" }],
          ["AWS/Lambda", "DurableExecutionTimedOut", "FunctionName", aws_lambda_function.orchestrator.function_name, { label = "executions timed out" }],
          ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.orchestrator.function_name, { label = "orchestrator invocation errors" }],
          ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.downloader.function_name, { label = "downloader invocation errors" }],
        ]
      }
    },
  ]
}

# --- per feed: one row each, the default feed first, then var.feeds by name ------------------
# Below the widgets above: the feed's batches and its files by outcome, on the Feed dimension
# every per-batch and per-file metric carries (dlpipe/metrics.py), and its download queue (the
# default feed's is the main queue, a named feed's its own: sqs.tf). A `for` here, so the rows
# are checked by rendering them with terraform (tests/infra/test_dashboard_feeds.py).

locals {
  dashboard_feeds = concat(["default"], sort(keys(var.feeds)))
  dashboard_feed_queues = merge(
    { default = aws_sqs_queue.downloads.name },
    { for name, queue in aws_sqs_queue.feed_downloads : name => queue.name },
  )
  dashboard_feed_widgets = flatten([
    for index, feed in local.dashboard_feeds : [
      {
        type   = "metric"
        x      = 0
        y      = 24 + 6 * index
        width  = 8
        height = 6
        properties = {
          title  = "Feed ${feed}: batches ended, and files expected"
          view   = "timeSeries"
          region = var.aws_region
          stat   = "Sum"
          period = 3600
          metrics = [
            [local.metric_namespace, "BatchCompleted", "Feed", feed, { label = "completed", color = "#2ca02c" }],
            [local.metric_namespace, "BatchFailed", "Feed", feed, { label = "failed", color = "#d62728" }],
            [local.metric_namespace, "BatchTimedOut", "Feed", feed, { label = "timed out", color = "#ff7f0e" }],
            [local.metric_namespace, "FilesExpected", "Feed", feed, { label = "files expected", yAxis = "right" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 8
        y      = 24 + 6 * index
        width  = 8
        height = 6
        properties = {
          title   = "Feed ${feed}: files by outcome"
          view    = "timeSeries"
          stacked = true
          region  = var.aws_region
          stat    = "Sum"
          period  = 300
          metrics = [
            [local.metric_namespace, "FileDownloads", "Feed", feed, "Outcome", "completed", { label = "completed", color = "#2ca02c" }],
            [local.metric_namespace, "FileDownloads", "Feed", feed, "Outcome", "failed", { label = "failed (retries used up)", color = "#ff7f0e" }],
            [local.metric_namespace, "FileDownloads", "Feed", feed, "Outcome", "error", { label = "error (permanent)", color = "#d62728" }],
          ]
        }
      },
      {
        type   = "metric"
        x      = 16
        y      = 24 + 6 * index
        width  = 8
        height = 6
        properties = {
          title  = "Feed ${feed}: its download queue"
          view   = "timeSeries"
          region = var.aws_region
          stat   = "Maximum"
          period = 300
          metrics = [
            ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", local.dashboard_feed_queues[feed], { label = "waiting" }],
            ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", local.dashboard_feed_queues[feed], { label = "in flight" }],
            ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", local.dashboard_feed_queues[feed], { label = "oldest message (s)", yAxis = "right" }],
          ]
        }
      },
    ]
  ])
}

resource "aws_cloudwatch_dashboard" "dlpipe" {
  dashboard_name = local.dashboard_name
  dashboard_body = jsonencode({ widgets = concat(local.dashboard_widgets, local.dashboard_feed_widgets) })
}

output "dashboard_url" {
  description = "Console URL of the dlpipe CloudWatch dashboard (linked from every alarm's description)."
  value       = local.dashboard_url
}
