variable "aws_region" {
  description = "AWS region to deploy dlpipe into."
  type        = string
  default     = "eu-west-1"
}

variable "environment" {
  description = "Deployment environment. Only prod gets point-in-time recovery and deletion protection."
  type        = string
  default     = "dev"

  validation {
    condition     = contains(["dev", "staging", "prod"], var.environment)
    error_message = "environment must be one of dev, staging, prod."
  }
}

variable "name_prefix" {
  description = "Prefix for every resource name, e.g. \"team-\". Empty keeps the names of the design (data-download-jobs)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^[a-z0-9-]{0,20}$", var.name_prefix))
    error_message = "name_prefix may hold at most 20 lower-case letters, digits and hyphens."
  }
}

# --- provider and schedule -------------------------------------------------------------------

variable "provider_base_url" {
  description = "Base URL of the data provider's HTTPS API (GET {base}/v1/files?date=...). The bearer token lives in the provider-token secret, never here."
  type        = string

  # A feed's URL rule (the `feeds` validation below; dlpipe/domain/url_settings.py): the
  # value becomes the functions' DLPIPE_PROVIDER_URL and sits in tfvars and the state, so a
  # credential, a query or a port the code would refuse at start is refused here first.
  validation {
    condition     = can(regex("^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$", var.provider_base_url)) && alltrue([for port in regexall("^https://[A-Za-z0-9.-]+:([0-9]+)", var.provider_base_url) : tonumber(port[0]) >= 1 && tonumber(port[0]) <= 65535])
    error_message = "provider_base_url must be an https:// URL with a host, an optional port from 1 to 65535 and path, and no credentials, query or fragment."
  }
}

variable "schedule_expression" {
  description = "EventBridge Scheduler expression for the daily run, evaluated in schedule_expression_timezone."
  type        = string
  default     = "cron(30 6 * * ? *)"

  validation {
    condition     = can(regex("^(cron|rate)\\(.+\\)$", var.schedule_expression))
    error_message = "schedule_expression must be a cron(...) or rate(...) expression."
  }
}

variable "schedule_expression_timezone" {
  description = "IANA time zone in which schedule_expression is evaluated, e.g. \"Europe/London\"."
  type        = string
  default     = "UTC"

  validation {
    condition     = can(regex("^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$", var.schedule_expression_timezone))
    error_message = "schedule_expression_timezone must be an IANA time zone name such as UTC or Europe/London."
  }
}

variable "schedule_enabled" {
  description = "Whether the daily schedule fires. Turn off to pause the pipeline without destroying anything."
  type        = bool
  default     = true
}

variable "schedule_max_retry_attempts" {
  description = "How often EventBridge Scheduler retries a failed invocation of the orchestrator before the event goes to the schedule's dead-letter queue."
  type        = number
  default     = 3

  validation {
    condition     = var.schedule_max_retry_attempts >= 0 && var.schedule_max_retry_attempts <= 185
    error_message = "schedule_max_retry_attempts must be between 0 and 185."
  }
}

variable "schedule_max_event_age_seconds" {
  description = "How long EventBridge Scheduler keeps retrying one scheduled invocation, in seconds."
  type        = number
  default     = 3600

  validation {
    condition     = var.schedule_max_event_age_seconds >= 60 && var.schedule_max_event_age_seconds <= 86400
    error_message = "schedule_max_event_age_seconds must be between 60 and 86400."
  }
}

# --- orchestrator (durable Lambda) -----------------------------------------------------------

variable "poll_interval_seconds" {
  description = "Seconds the orchestrator waits (durably, without compute) between two completion checks (DLPIPE_POLL_INTERVAL_SECONDS)."
  type        = number
  default     = 300

  validation {
    condition     = var.poll_interval_seconds >= 10 && var.poll_interval_seconds <= 86400 && floor(var.poll_interval_seconds) == var.poll_interval_seconds
    error_message = "poll_interval_seconds must be a whole number between 10 and 86400."
  }
}

variable "max_polls" {
  description = "Completion checks before the orchestrator marks the batch timed out (DLPIPE_MAX_POLLS). poll_interval_seconds * max_polls must fit in durable_execution_timeout_seconds."
  type        = number
  default     = 12

  validation {
    condition     = var.max_polls >= 1 && var.max_polls <= 1000 && floor(var.max_polls) == var.max_polls
    error_message = "max_polls must be a whole number between 1 and 1000."
  }
}

variable "date_offset_days" {
  description = "Which day a run asks the provider for: today minus this many days (DLPIPE_DATE_OFFSET_DAYS)."
  type        = number
  default     = 1

  validation {
    condition     = var.date_offset_days >= 0 && var.date_offset_days <= 30 && floor(var.date_offset_days) == var.date_offset_days
    error_message = "date_offset_days must be a whole number between 0 and 30."
  }
}

variable "restatement_window_days" {
  description = "How many earlier days a scheduled orchestrator run re-lists to catch the vendor's restatements of days already delivered (DLPIPE_RESTATEMENT_WINDOW_DAYS): a restated day gets a run of its own, which makes its revision batch. 0 turns the re-check off. Vendors' late corrections of a business day normally come in the next 1-3 days; each day re-checked costs a run one provider listing and one BatchIndex query. A feed's restatement_window_days overrides it."
  type        = number
  default     = 3

  validation {
    condition     = var.restatement_window_days >= 0 && var.restatement_window_days <= 31 && floor(var.restatement_window_days) == var.restatement_window_days
    error_message = "restatement_window_days must be a whole number between 0 and 31."
  }
}

variable "sweep_requeue" {
  description = "Whether each completion check also finishes (object already published) or requeues jobs whose worker died (expired lease) and re-sends available jobs nobody took (DLPIPE_SWEEP_REQUEUE). On by default: with it no crash needs an operator (RELIABILITY.md, recovery bounds). Off: they are only counted (StuckJobs metric)."
  type        = bool
  default     = true
}

variable "resend_after_seconds" {
  description = "Age after which an `available` job nobody claimed counts as idle for the sweeper (DLPIPE_RESEND_AFTER_SECONDS)."
  type        = number
  default     = 1800

  validation {
    condition     = var.resend_after_seconds >= 60 && var.resend_after_seconds <= 86400 && floor(var.resend_after_seconds) == var.resend_after_seconds
    error_message = "resend_after_seconds must be a whole number from 60 to 86400."
  }
}

variable "durable_execution_timeout_seconds" {
  description = "Upper bound on one durable orchestrator execution, all waits included (durable_config.execution_timeout). Must exceed poll_interval_seconds * max_polls plus durable_setup_margin_seconds."
  type        = number
  default     = 14400

  validation {
    condition     = var.durable_execution_timeout_seconds >= 60 && var.durable_execution_timeout_seconds <= 31622400
    error_message = "durable_execution_timeout_seconds must be between 60 and 31622400 (366 days)."
  }
}

variable "durable_setup_margin_seconds" {
  description = "Time reserved inside the durable execution timeout for the steps before polling starts (create the batch, fetch the file list, write jobs, queue messages)."
  type        = number
  default     = 1800

  validation {
    condition     = var.durable_setup_margin_seconds >= 0
    error_message = "durable_setup_margin_seconds must not be negative."
  }
}

variable "durable_retention_days" {
  description = "Days Lambda keeps a finished durable execution's history (durable_config.retention_period)."
  type        = number
  default     = 14

  validation {
    condition     = var.durable_retention_days >= 1 && var.durable_retention_days <= 90
    error_message = "durable_retention_days must be between 1 and 90."
  }
}

variable "orchestrator_timeout_seconds" {
  description = "Timeout of one orchestrator invocation (one replay plus the next step). The waits between polls do not count against it."
  type        = number
  default     = 900

  validation {
    condition     = var.orchestrator_timeout_seconds >= 30 && var.orchestrator_timeout_seconds <= 900
    error_message = "orchestrator_timeout_seconds must be between 30 and 900."
  }
}

variable "orchestrator_memory_mb" {
  description = "Memory of the orchestrator function in MB. Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB, and the write-manifest and fan-out steps are CPU-bound: the default gives a largest_day_files day's write-manifest step a modelled 253 s of one 900 s invocation (lambda_orchestrator.tf, the sizing model). A plan refuses less memory than that day needs."
  type        = number
  default     = 1769

  validation {
    condition     = var.orchestrator_memory_mb >= 128 && var.orchestrator_memory_mb <= 10240
    error_message = "orchestrator_memory_mb must be between 128 and 10240."
  }
}

variable "orchestrator_ephemeral_storage_mb" {
  description = "Size of the orchestrator's /tmp in MB: the write-manifest step spools its sorted runs, the manifest and the file lists there, at most about 1.4 KB a file. A plan refuses less than a largest_day_files day spools, with half again for headroom."
  type        = number
  default     = 512

  validation {
    condition     = var.orchestrator_ephemeral_storage_mb >= 512 && var.orchestrator_ephemeral_storage_mb <= 10240 && floor(var.orchestrator_ephemeral_storage_mb) == var.orchestrator_ephemeral_storage_mb
    error_message = "orchestrator_ephemeral_storage_mb must be a whole number between 512 and 10240 (Lambda's range)."
  }
}

variable "largest_day_files" {
  description = "The most files one feed's day may list. It sizes nothing by itself: the plan checks that orchestrator_memory_mb, orchestrator_ephemeral_storage_mb, orchestrator_timeout_seconds and durable_setup_margin_seconds fit a day this large (lambda_orchestrator.tf, the sizing model)."
  type        = number
  default     = 100000

  validation {
    condition     = var.largest_day_files >= 1 && var.largest_day_files <= 1000000 && floor(var.largest_day_files) == var.largest_day_files
    error_message = "largest_day_files must be a whole number between 1 and 1000000."
  }
}

variable "reserve_lambda_concurrency" {
  description = "Reserve concurrency for both functions: orchestrator_reserved_concurrency for the orchestrator, and for the downloader the sum of its event source mappings' maximum_concurrency (so that neither other functions nor the mappings themselves throttle its event sources). Off by default because Lambda refuses any reservation that would leave the account fewer than 100 unreserved executions, which fails the apply on accounts with a low concurrency quota (new accounts often have 10); with it on, a plan refuses reservations past lambda_account_concurrency_limit less 100."
  type        = bool
  default     = false
}

variable "lambda_account_concurrency_limit" {
  description = "The account's Lambda concurrent executions quota in this region (Service Quotas, \"Concurrent executions\"; 1,000 by default). Used only with reserve_lambda_concurrency: the plan refuses reservations that would leave fewer than 100 unreserved, as Lambda would at apply."
  type        = number
  default     = 1000

  validation {
    condition     = var.lambda_account_concurrency_limit >= 10 && floor(var.lambda_account_concurrency_limit) == var.lambda_account_concurrency_limit
    error_message = "lambda_account_concurrency_limit must be a whole number of at least 10."
  }
}

variable "orchestrator_reserved_concurrency" {
  description = "Reserved concurrent executions of the orchestrator when reserve_lambda_concurrency is on. One run a day needs 1; a little headroom lets a manual re-run overlap the scheduled one."
  type        = number
  default     = 5

  validation {
    condition     = var.orchestrator_reserved_concurrency >= 1 && var.orchestrator_reserved_concurrency <= 100
    error_message = "orchestrator_reserved_concurrency must be between 1 and 100."
  }
}

variable "orchestrator_live_version" {
  description = "Published orchestrator version the \"live\" alias points at. null (default) follows the version this apply published; set it to an older number to roll back."
  type        = string
  default     = null

  validation {
    condition     = var.orchestrator_live_version == null || can(regex("^[0-9]+$", var.orchestrator_live_version))
    error_message = "orchestrator_live_version must be null or a version number such as \"7\"."
  }
}

# --- downloader (SQS-triggered Lambda) -------------------------------------------------------

variable "downloader_timeout_seconds" {
  description = "Timeout of one downloader invocation in seconds. It must cover downloader_batch_size files end to end; the queue's visibility timeout is six times this value."
  type        = number
  default     = 600

  validation {
    condition     = var.downloader_timeout_seconds >= 60 && var.downloader_timeout_seconds <= 900
    error_message = "downloader_timeout_seconds must be between 60 and 900."
  }
}

variable "downloader_memory_mb" {
  description = "Memory of the downloader in MB. Lambda allots CPU and network in proportion; 1024 MB decrypts and uploads at tens of MB/s while holding a few multipart parts in memory."
  type        = number
  default     = 1024

  validation {
    condition     = var.downloader_memory_mb >= 256 && var.downloader_memory_mb <= 10240
    error_message = "downloader_memory_mb must be between 256 and 10240."
  }
}

variable "downloader_ephemeral_storage_mb" {
  description = "Size of /tmp for the downloader in MB. Files stream from the provider through decryption into a multipart upload, so the 512 MB minimum suffices."
  type        = number
  default     = 512

  validation {
    condition     = var.downloader_ephemeral_storage_mb >= 512 && var.downloader_ephemeral_storage_mb <= 10240
    error_message = "downloader_ephemeral_storage_mb must be between 512 and 10240."
  }
}

variable "downloader_batch_size" {
  description = "SQS messages (files) per downloader invocation. 1 gives every file its own timeout budget; raise it only for many small files."
  type        = number
  default     = 1

  validation {
    condition     = var.downloader_batch_size >= 1 && var.downloader_batch_size <= 10
    error_message = "downloader_batch_size must be between 1 and 10."
  }
}

variable "downloader_max_concurrency" {
  description = "Most downloader invocations the SQS event source runs at once (scaling_config.maximum_concurrency). With named feeds, each feed's mapping runs its share of it, and the caps may add up to more; with reserve_lambda_concurrency the downloader reserves that sum. Bounds the load on each provider."
  type        = number
  default     = 10

  validation {
    condition     = var.downloader_max_concurrency >= 2 && var.downloader_max_concurrency <= 1000
    error_message = "downloader_max_concurrency must be between 2 and 1000."
  }
}

variable "lease_seconds" {
  description = "Length of a downloader's claim on a file (DLPIPE_LEASE_SECONDS). A claim not extended within this time may be taken over by another worker."
  type        = number
  default     = 300

  validation {
    condition     = var.lease_seconds >= 30 && var.lease_seconds <= 3600
    error_message = "lease_seconds must be between 30 and 3600."
  }
}

variable "max_receive_count" {
  description = "Deliveries of one download message before SQS moves it to the dead-letter queue. At least 5, as AWS advises for Lambda event sources: a batch the event source fetched but Lambda throttled counts as a receive too."
  type        = number
  default     = 5

  validation {
    condition     = var.max_receive_count >= 5 && var.max_receive_count <= 1000
    error_message = "max_receive_count must be between 5 and 1000 (AWS advises at least 5 for a queue a Lambda event source reads)."
  }
}

# --- packaging, logging, storage -------------------------------------------------------------

variable "lambda_package_path" {
  description = "Path of the Lambda deployment package built by `make package`, relative to the directory terraform runs in (terraform/)."
  type        = string
  default     = "../build/dlpipe-lambda.zip"

  validation {
    condition     = endswith(var.lambda_package_path, ".zip")
    error_message = "lambda_package_path must name a .zip file."
  }
}

variable "log_level" {
  description = "Application log level of both functions and the worker (DLPIPE_LOG_LEVEL)."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR."
  }
}

variable "log_retention_days" {
  description = "Retention of every dlpipe CloudWatch log group, in days. The logs are the per-file audit trail, hence a year by default."
  type        = number
  default     = 365

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ..., 365, ..., 3653)."
  }
}

variable "noncurrent_version_expiration_days" {
  description = "Days the destination bucket keeps an overwritten (noncurrent) object version before deleting it."
  type        = number
  default     = 30

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1
    error_message = "noncurrent_version_expiration_days must be at least 1."
  }
}

# --- alarms ----------------------------------------------------------------------------------

variable "alarm_email" {
  description = "E-mail address subscribed to the alarm topic. Empty: no subscription (subscribe a pager or chat integration to the topic yourself)."
  type        = string
  default     = ""

  validation {
    condition     = var.alarm_email == "" || can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", var.alarm_email))
    error_message = "alarm_email must be empty or an e-mail address."
  }
}

variable "feed_queue_oldest_age_alarm_seconds" {
  description = "Age, in seconds, of the oldest message in a named feed's download queue above which its alarm fires (ApproximateAgeOfOldestMessage, Maximum over 5 minutes). Above the queue's visibility timeout (six downloader timeouts, 3,600 s by default) by default, so that a message coming back after a worker died does not page."
  type        = number
  default     = 7200

  validation {
    condition     = var.feed_queue_oldest_age_alarm_seconds >= 300 && var.feed_queue_oldest_age_alarm_seconds <= 1209600 && floor(var.feed_queue_oldest_age_alarm_seconds) == var.feed_queue_oldest_age_alarm_seconds
    error_message = "feed_queue_oldest_age_alarm_seconds must be a whole number between 300 and 1209600."
  }
}

# --- optional container worker (ECS Fargate) -------------------------------------------------

variable "enable_ecs_worker" {
  description = "Run long-polling `dlpipe worker` tasks on ECS Fargate besides (or instead of) the downloader Lambda, e.g. for files that take longer than 15 minutes."
  type        = bool
  default     = false
}

variable "ecs_worker_image" {
  description = "Container image of the worker (must contain the dlpipe package and its `dlpipe` entry point). Required when enable_ecs_worker is true."
  type        = string
  default     = ""
}

variable "ecs_worker_concurrency" {
  description = "Files one worker task downloads at once from each queue it polls (`dlpipe worker --concurrency N`: N for the main queue and N for the large-file queue)."
  type        = number
  default     = 4

  validation {
    condition     = var.ecs_worker_concurrency >= 1 && var.ecs_worker_concurrency <= 64
    error_message = "ecs_worker_concurrency must be between 1 and 64."
  }
}

variable "ecs_worker_desired_count" {
  description = "Number of worker tasks the ECS service keeps running when enabled."
  type        = number
  default     = 1

  validation {
    condition     = var.ecs_worker_desired_count >= 0 && var.ecs_worker_desired_count <= 100
    error_message = "ecs_worker_desired_count must be between 0 and 100."
  }
}

variable "ecs_worker_cpu" {
  description = "Fargate CPU units of one worker task (1024 = 1 vCPU)."
  type        = number
  default     = 1024

  validation {
    condition     = contains([256, 512, 1024, 2048, 4096, 8192, 16384], var.ecs_worker_cpu)
    error_message = "ecs_worker_cpu must be a Fargate CPU size: 256, 512, 1024, 2048, 4096, 8192 or 16384."
  }
}

variable "ecs_worker_memory_mb" {
  description = "Memory of one worker task in MB (must be a valid Fargate combination with ecs_worker_cpu)."
  type        = number
  default     = 2048

  validation {
    condition     = var.ecs_worker_memory_mb >= 512 && var.ecs_worker_memory_mb <= 122880
    error_message = "ecs_worker_memory_mb must be between 512 and 122880."
  }
}

variable "ecs_subnet_ids" {
  description = "Private subnets (with a NAT or VPC endpoints for SQS, DynamoDB, S3, Secrets Manager, KMS and the provider) for the worker tasks. Required when enable_ecs_worker is true."
  type        = list(string)
  default     = []
}

variable "ecs_security_group_ids" {
  description = "Security groups of the worker tasks (egress to HTTPS only is enough). Required when enable_ecs_worker is true."
  type        = list(string)
  default     = []
}

variable "aws_outage_budget_seconds" {
  description = "How long a fan-out chunk or a completion check keeps retrying while SQS or DynamoDB is unavailable (throttling, 5xx, timeouts, connection errors), with a suspended backoff of 15 s doubling to 2 min, before the batch ends failed (DLPIPE_AWS_OUTAGE_BUDGET_SECONDS). It counts against durable_execution_timeout_seconds; 0 fails the day at the first such fault."
  type        = number
  default     = 900

  validation {
    condition     = var.aws_outage_budget_seconds >= 0 && var.aws_outage_budget_seconds <= 86400 && floor(var.aws_outage_budget_seconds) == var.aws_outage_budget_seconds
    error_message = "aws_outage_budget_seconds must be a whole number between 0 and 86400."
  }
}

variable "provider_outage_budget_seconds" {
  description = "How long a day keeps retrying the provider's listing while it is unavailable (5xx, 429, timeouts, connection errors), with a suspended backoff of 30 s doubling to 10 min, before the batch ends failed (DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS). It counts against durable_execution_timeout_seconds; 0 fails the day at the first outage."
  type        = number
  default     = 7200

  validation {
    condition     = var.provider_outage_budget_seconds >= 0 && var.provider_outage_budget_seconds <= 86400 && floor(var.provider_outage_budget_seconds) == var.provider_outage_budget_seconds
    error_message = "provider_outage_budget_seconds must be a whole number between 0 and 86400."
  }
}

# --- feeds: named providers besides the default one ------------------------------------------

variable "feed_max_share_percent" {
  description = "Share of the downloaders one feed may hold at once, in percent, for every feed that sets no max_share_percent of its own, the default feed included (DLPIPE_MAX_SHARE_PERCENT). With named feeds each feed's event source mapping polls its own queue with maximum_concurrency = max(2, floor(downloader_max_concurrency * share / 100)), and the ECS worker gives each feed at most that share of its threads; with feeds = {} the one feed holds everything."
  type        = number
  default     = 50

  validation {
    condition     = var.feed_max_share_percent >= 1 && var.feed_max_share_percent <= 100 && floor(var.feed_max_share_percent) == var.feed_max_share_percent
    error_message = "feed_max_share_percent must be a whole number between 1 and 100."
  }
}

variable "feeds" {
  description = "Named feeds, each one provider's daily delivery, keyed by feed name. The default feed (provider_base_url, schedule_expression, the two dlpipe/ secrets) always runs; each entry here adds a schedule, its secrets and its configuration parameter, all keyed by the name. token_secret: null creates one, or an existing secret's ARN. private_key_secret: null creates one, an existing secret's ARN, or another feed's name to share that feed's key. Overrides left null take the deployment's values."
  type = map(object({
    provider_base_url          = string
    schedule                   = string
    time_zone                  = string
    destination_prefix         = string
    url_allowed_hosts          = optional(list(string), [])
    deadline                   = optional(string)
    poll_interval_seconds      = optional(number)
    max_polls                  = optional(number)
    large_file_threshold_bytes = optional(number)
    stall_floor_bytes          = optional(number)
    stall_window_seconds       = optional(number)
    max_share_percent          = optional(number)
    restatement_window_days    = optional(number)
    token_secret               = optional(string)
    private_key_secret         = optional(string)
  }))
  default = {}

  # Each validation is dlpipe/domain/feeds.py's rule for its field, with the same patterns:
  # tests/infra/test_feed_rule_parity.py holds the two to each other over a table of values.
  validation {
    condition     = alltrue([for name, feed in var.feeds : can(regex("^[a-z0-9][a-z0-9-]{0,30}$", name)) && name != "default"])
    error_message = "feeds: every feed name must match [a-z0-9][a-z0-9-]{0,30} (lower-case letters, digits, hyphens; at most 31) and must not be \"default\", the name of the feed the top-level variables configure."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : can(regex("^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$", feed.provider_base_url)) && alltrue([for port in regexall("^https://[A-Za-z0-9.-]+:([0-9]+)", feed.provider_base_url) : tonumber(port[0]) >= 1 && tonumber(port[0]) <= 65535])])
    error_message = "feeds: each feed's provider_base_url must be an https:// URL with a host, an optional port from 1 to 65535 and path, and no credentials, query or fragment."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : can(regex("^(cron\\([0-9A-Za-z*?,/#-]+( [0-9A-Za-z*?,/#-]+){5}\\)|rate\\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\\))$", feed.schedule))])
    error_message = "feeds: each feed's schedule must be a cron expression of 6 fields, cron(0 7 * * ? *), or rate(N minutes|hours|days)."
  }

  # Terraform has no zoneinfo database: this checks the shape of an IANA name (Area/Location,
  # letters, digits, _ + -), not that the zone exists; Scheduler refuses an unknown zone at apply.
  validation {
    condition     = alltrue([for name, feed in var.feeds : can(regex("^[A-Za-z_][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$", feed.time_zone)) && length(feed.time_zone) <= 50])
    error_message = "feeds: each feed's time_zone must be an IANA time zone name such as UTC or Europe/London."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : can(regex("^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*/?$", feed.destination_prefix)) && length(trimsuffix(feed.destination_prefix, "/")) <= 200])
    error_message = "feeds: each feed's destination_prefix must be a relative S3 key prefix of segments of letters, digits, _ and - joined by /, at most 200 characters, such as \"vendor-a/\" (the trailing / is optional)."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : lower(split("/", feed.destination_prefix)[0]) != "_dlpipe"])
    error_message = "feeds: no feed's destination_prefix may lie in _dlpipe/ (in any letter case), where dlpipe keeps its own keys (the day manifests)."
  }

  # A consumer listing one feed's prefix must find that feed's files only: no two prefixes
  # equal, contain or lie inside one another, segment by segment and in any letter case. The
  # default feed publishes at the bucket's root, which no variable moves (the orchestrator's
  # root guard keeps its entities off these prefixes).
  validation {
    condition = alltrue(flatten([
      for name, feed in var.feeds : [
        for other, theirs in var.feeds : name == other || !(
          startswith(lower("${trimsuffix(feed.destination_prefix, "/")}/"), lower("${trimsuffix(theirs.destination_prefix, "/")}/"))
        )
      ]
    ]))
    error_message = "feeds: no feed's destination_prefix may equal, contain or lie inside another feed's, in any letter case (\"vendor\" and \"Vendor/daily\" overlap; \"vendor\" and \"vendor-b\" do not)."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : feed.deadline == null || can(regex("^([01][0-9]|2[0-3]):[0-5][0-9]$", feed.deadline))])
    error_message = "feeds: each feed's deadline must be null or a local time HH:MM (00:00 to 23:59) in its time_zone."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : alltrue([for host in feed.url_allowed_hosts : can(regex("^(\\*\\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:([0-9]{1,5}|\\*))?$", host))])])
    error_message = "feeds: each entry of a feed's url_allowed_hosts must be a lower-case host name, *.domain or host:port, such as files.example.com."
  }

  validation {
    condition = alltrue([for name, feed in var.feeds : alltrue([
      feed.poll_interval_seconds == null || try(feed.poll_interval_seconds >= 10 && feed.poll_interval_seconds <= 86400 && floor(feed.poll_interval_seconds) == feed.poll_interval_seconds, false),
      feed.max_polls == null || try(feed.max_polls >= 1 && feed.max_polls <= 1000 && floor(feed.max_polls) == feed.max_polls, false),
      feed.large_file_threshold_bytes == null || try(feed.large_file_threshold_bytes >= 0 && feed.large_file_threshold_bytes <= 5497558138880 && floor(feed.large_file_threshold_bytes) == feed.large_file_threshold_bytes, false),
      feed.stall_floor_bytes == null || try(feed.stall_floor_bytes >= 0 && feed.stall_floor_bytes <= 1099511627776 && floor(feed.stall_floor_bytes) == feed.stall_floor_bytes, false),
      feed.stall_window_seconds == null || try(feed.stall_window_seconds >= 5 && feed.stall_window_seconds <= 3600 && floor(feed.stall_window_seconds) == feed.stall_window_seconds, false),
    ])])
    error_message = "feeds: a feed's poll_interval_seconds must be a whole number from 10 to 86400, max_polls from 1 to 1000, large_file_threshold_bytes from 0 to 5497558138880, stall_floor_bytes from 0 to 1099511627776, stall_window_seconds from 5 to 3600 (or null for the deployment's values)."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : feed.max_share_percent == null || try(feed.max_share_percent >= 1 && feed.max_share_percent <= 100 && floor(feed.max_share_percent) == feed.max_share_percent, false)])
    error_message = "feeds: a feed's max_share_percent must be a whole number from 1 to 100 (or null for feed_max_share_percent)."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : feed.restatement_window_days == null || try(feed.restatement_window_days >= 0 && feed.restatement_window_days <= 31 && floor(feed.restatement_window_days) == feed.restatement_window_days, false)])
    error_message = "feeds: a feed's restatement_window_days must be a whole number from 0 to 31 (or null for the deployment's restatement_window_days)."
  }

  validation {
    condition     = alltrue([for name, feed in var.feeds : feed.token_secret == null || can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$", feed.token_secret))])
    error_message = "feeds: a feed's token_secret must be null (a secret is created for it) or the ARN of an existing Secrets Manager secret."
  }

  # Sharing is one level deep: the named feed holds its own key (created or an ARN), so every
  # feed's key is found in one step and no cycle can form.
  validation {
    condition = alltrue([for name, feed in var.feeds : feed.private_key_secret == null || can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$", feed.private_key_secret)) || try(
      feed.private_key_secret != name && contains(keys(var.feeds), feed.private_key_secret) && !contains(keys(var.feeds), coalesce(var.feeds[feed.private_key_secret].private_key_secret, "-")), false
    )])
    error_message = "feeds: a feed's private_key_secret must be null (a secret is created for it), the ARN of an existing Secrets Manager secret, or the name of another feed whose own key (not shared in turn) it shares."
  }
}
