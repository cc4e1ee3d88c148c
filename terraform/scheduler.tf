# The daily trigger. EventBridge Scheduler invokes the orchestrator's "live" alias
# asynchronously; the durable execution then runs for hours without holding the schedule.

resource "aws_scheduler_schedule" "daily" {
  name                         = "${var.name_prefix}dlpipe-daily"
  description                  = "Starts the dlpipe orchestrator once a day."
  schedule_expression          = var.schedule_expression
  schedule_expression_timezone = var.schedule_expression_timezone
  state                        = var.schedule_enabled ? "ENABLED" : "DISABLED"
  kms_key_arn                  = aws_kms_key.dlpipe.arn

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_alias.orchestrator_live.arn
    role_arn = aws_iam_role.scheduler.arn

    # The scheduled time (not the time of a retry) is what the run is for; the orchestrator
    # derives the date from it minus DLPIPE_DATE_OFFSET_DAYS. A manual run sends {"date": ...}.
    # Literal JSON, never jsonencode(): that writes "<" and ">" as \u003c and \u003e, so
    # Scheduler would not find its keyword and every run would get the keyword's own text.
    input = <<-EOT
      {"scheduled_time": "<aws.scheduler.scheduled-time>"}
    EOT

    retry_policy {
      maximum_retry_attempts       = var.schedule_max_retry_attempts
      maximum_event_age_in_seconds = var.schedule_max_event_age_seconds
    }

    dead_letter_config {
      arn = aws_sqs_queue.schedule_dlq.arn
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}

# One schedule per named feed, keyed by its name, each in its own time zone. The input names
# the feed, so one execution runs one feed's day. Scheduler sets no durable execution name
# (its Lambda target has no such field): Lambda gives each execution a unique one, so two
# feeds' days, or a feed and the default, never collide (terraform/README.md, "Feeds").
resource "aws_scheduler_schedule" "feed" {
  for_each = var.feeds

  name                         = "${var.name_prefix}dlpipe-feed-${each.key}"
  description                  = "Starts the dlpipe orchestrator for feed ${each.key} once a day."
  schedule_expression          = each.value.schedule
  schedule_expression_timezone = each.value.time_zone
  state                        = var.schedule_enabled ? "ENABLED" : "DISABLED"
  kms_key_arn                  = aws_kms_key.dlpipe.arn

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_alias.orchestrator_live.arn
    role_arn = aws_iam_role.scheduler.arn

    # Literal JSON, as for the default feed: jsonencode() would escape the keyword's < and >.
    input = <<-EOT
      {"feed": "${each.key}", "scheduled_time": "<aws.scheduler.scheduled-time>"}
    EOT

    retry_policy {
      maximum_retry_attempts       = var.schedule_max_retry_attempts
      maximum_event_age_in_seconds = var.schedule_max_event_age_seconds
    }

    dead_letter_config {
      arn = aws_sqs_queue.schedule_dlq.arn
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}
