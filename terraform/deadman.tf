# The dead-man's switch (README "What fires when"): per feed, an alarm when no day of that feed
# completed for freshness_window_hours. It needs nothing to run to fire: a schedule that never
# fired, a disabled schedule, a deployment whose orchestrator crashes at start, or a provider
# that never delivers all leave the feed's BatchCompleted metric (dimension Feed, the feed's
# name, "default" for the default feed) without data points, and missing data breaches.
#
# CloudWatch cannot evaluate "at 09:30 local time": an alarm looks back over a sliding window
# of whole periods. So the switch is a rolling window, hourly periods, every one of which must
# be empty for the alarm to fire: it fires within the hour after the window has passed since
# the feed's last completed batch. With the default 26 hours and a feed that completes near
# 07:00, a missed day raises it near 09:00 the next morning. The orchestrator's own `Day Late`
# event tells the exact deadline while it runs; this alarm is for when nothing runs.

variable "freshness_window_hours" {
  description = "Hours without a completed day after which a feed's dead-man's-switch alarm fires: a day (24) plus the slack a day's completion time varies by."
  type        = number
  default     = 26

  validation {
    condition     = var.freshness_window_hours >= 25 && var.freshness_window_hours <= 168 && floor(var.freshness_window_hours) == var.freshness_window_hours
    error_message = "freshness_window_hours must be a whole number from 25 (a day and an hour: less would page every day a run finishes later than the day before) to 168 (CloudWatch looks back at most 7 days)."
  }
}

locals {
  # The default feed and every named feed, by name: the metric's Feed dimension values.
  feeds_and_default = toset(concat(["default"], keys(var.feeds)))
}

resource "aws_cloudwatch_metric_alarm" "feed_freshness" {
  for_each = local.feeds_and_default

  alarm_name          = "${var.name_prefix}dlpipe-${each.key}-no-completed-day"
  alarm_description   = "Feed ${each.key}: no day completed in the last ${var.freshness_window_hours} hours (dead-man's switch): check its schedule, the orchestrator's executions and the provider. Dashboard: ${local.dashboard_url}"
  namespace           = local.metric_namespace
  metric_name         = "BatchCompleted"
  dimensions          = { Feed = each.key }
  statistic           = "Sum"
  period              = 3600
  evaluation_periods  = var.freshness_window_hours
  datapoints_to_alarm = var.freshness_window_hours
  comparison_operator = "LessThanThreshold"
  threshold           = 1
  treat_missing_data  = "breaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  ok_actions          = [aws_sns_topic.alarms.arn]
}
