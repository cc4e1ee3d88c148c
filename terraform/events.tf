# Hand-off events (README "Hand-off: events"): the orchestrator puts one event per outcome on an
# EventBridge bus, source "dlpipe", detail-types "Day Completed", "Day Failed", "Day Timed Out",
# "Day Revised" (a restated day's new revision) and "Day Late". The bus is the account's default bus unless event_bus_name names another,
# which is then created here. Only the orchestrator may put events on it (iam.tf).
#
# The variables of this part live here, next to what they configure.

variable "event_bus_name" {
  description = "EventBridge bus the hand-off events go to: \"default\" (the account's default bus) or the name of a bus this configuration creates."
  type        = string
  default     = "default"

  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{1,256}$", var.event_bus_name)) && !startswith(var.event_bus_name, "aws.")
    error_message = "event_bus_name must be \"default\" or a bus name of letters, digits, '.', '_' and '-' (at most 256, not starting with \"aws.\")."
  }
}

variable "example_downstream_queue" {
  description = "Create the example consumer of the hand-off events: a rule on source dlpipe delivering to an SQS queue, for downstream teams to copy."
  type        = bool
  default     = false
}

variable "day_deadline" {
  description = "Local time HH:MM, in schedule_expression_timezone, by which the default feed's day must be complete on the day its schedule runs (null: no deadline). The orchestrator sends \"Day Late\" once it passes while the day still runs; named feeds set their own deadline in var.feeds."
  type        = string
  default     = null

  validation {
    condition     = var.day_deadline == null || can(regex("^([01][0-9]|2[0-3]):[0-5][0-9]$", var.day_deadline))
    error_message = "day_deadline must be null or a local time HH:MM (00:00 to 23:59)."
  }
}

locals {
  custom_event_bus = var.event_bus_name != "default"
  event_bus_name   = local.custom_event_bus ? aws_cloudwatch_event_bus.handoff[0].name : "default"
  # A bus's ARN is its name under event-bus/, the default bus's too: one form for both.
  event_bus_arn = "arn:${local.partition}:events:${data.aws_region.current.region}:${local.account_id}:event-bus/${var.event_bus_name}"

  # The orchestrator's settings for the hand-off (dlpipe/config.py names them).
  handoff_environment = merge(
    { DLPIPE_EVENT_BUS = local.event_bus_name },
    var.day_deadline == null ? {} : {
      DLPIPE_DAY_DEADLINE           = var.day_deadline
      DLPIPE_DAY_DEADLINE_TIME_ZONE = var.schedule_expression_timezone
    },
  )

  # What the example rule matches: every dlpipe event. A consumer that waits only for complete
  # days and their revisions adds "detail-type" = ["Day Completed", "Day Revised"].
  handoff_event_pattern = {
    source = ["dlpipe"]
  }
}

resource "aws_cloudwatch_event_bus" "handoff" {
  count = local.custom_event_bus ? 1 : 0

  name        = var.event_bus_name
  description = "dlpipe hand-off events: a day completed, failed, timed out or is late."
}

# --- the example consumer (var.example_downstream_queue) -------------------------------------

resource "aws_cloudwatch_event_rule" "handoff_example" {
  count = var.example_downstream_queue ? 1 : 0

  name           = "${var.name_prefix}dlpipe-handoff-example"
  description    = "Example: every dlpipe hand-off event to the example downstream queue."
  event_bus_name = local.event_bus_name
  event_pattern  = jsonencode(local.handoff_event_pattern)
}

# The consumer's own queue, as a downstream team would own it: encrypted with SQS-managed keys,
# because EventBridge delivers as a service, and a queue under the dlpipe key would need a key
# policy grant for events.amazonaws.com that a consumer in another account cannot give. The
# events carry the day's counts and the manifest's URI, never file contents.
resource "aws_sqs_queue" "handoff_example" {
  count = var.example_downstream_queue ? 1 : 0

  name                      = "${var.name_prefix}dlpipe-downstream-example"
  sqs_managed_sse_enabled   = true
  message_retention_seconds = 1209600
}

resource "aws_cloudwatch_event_target" "handoff_example" {
  count = var.example_downstream_queue ? 1 : 0

  rule           = aws_cloudwatch_event_rule.handoff_example[0].name
  event_bus_name = local.event_bus_name
  target_id      = "downstream-queue"
  arn            = aws_sqs_queue.handoff_example[0].arn
}

# EventBridge may send to the queue only for this rule (aws:SourceArn).
data "aws_iam_policy_document" "handoff_example_queue" {
  count = var.example_downstream_queue ? 1 : 0

  statement {
    sid       = "EventBridgeDeliversHandoffEvents"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.handoff_example[0].arn]

    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.handoff_example[0].arn]
    }
  }
}

resource "aws_sqs_queue_policy" "handoff_example" {
  count = var.example_downstream_queue ? 1 : 0

  queue_url = aws_sqs_queue.handoff_example[0].id
  policy    = data.aws_iam_policy_document.handoff_example_queue[0].json
}

output "event_bus_arn" {
  description = "ARN of the EventBridge bus the hand-off events go to (a consumer's rule names it)."
  value       = local.event_bus_arn
}

output "handoff_example_queue_url" {
  description = "URL of the example downstream queue (null unless example_downstream_queue)."
  value       = one(aws_sqs_queue.handoff_example[*].url)
}
