# Optional: `dlpipe worker` on ECS Fargate, long-polling the same queue as the downloader
# Lambda and, alone, the large-file queue (sqs.tf: files the orchestrator routes there
# because they need longer than the downloader's timeout). Off by default
# (var.enable_ecs_worker); every resource here has count = 0 then.
#
# Variables: ecs_worker_image (required when enabled), ecs_subnet_ids and
# ecs_security_group_ids (required when enabled; private subnets with egress to AWS APIs and
# the provider), ecs_worker_concurrency, ecs_worker_desired_count, ecs_worker_cpu,
# ecs_worker_memory_mb.

locals {
  ecs_worker_count = var.enable_ecs_worker ? 1 : 0

  # If the image is in ECR, the execution role may pull from that one repository only.
  ecr_image_parts = regexall("^([0-9]{12})\\.dkr\\.ecr\\.([a-z0-9-]+)\\.amazonaws\\.com/([^:@]+)", var.ecs_worker_image)
  ecr_repository_arns = [
    for parts in local.ecr_image_parts : "arn:${local.partition}:ecr:${parts[1]}:${parts[0]}:repository/${parts[2]}"
  ]

  ecs_worker_environment = merge(
    local.downloader_environment, local.large_file_environment, { AWS_REGION = var.aws_region }
  )
}

resource "aws_ecs_cluster" "worker" {
  count = local.ecs_worker_count
  name  = "${var.name_prefix}dlpipe"

  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_cloudwatch_log_group" "ecs_worker" {
  count             = local.ecs_worker_count
  name              = "/ecs/${var.name_prefix}dlpipe-worker"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.dlpipe.arn
}

# The task role: what the worker's code may do (the downloader's code, plus its own long
# poll of the download queue and of the large-file queue, which only the worker polls).
resource "aws_iam_role" "ecs_task" {
  count              = local.ecs_worker_count
  name               = "${var.name_prefix}dlpipe-worker-task"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

resource "aws_iam_role_policy" "ecs_task" {
  count  = local.ecs_worker_count
  name   = "dlpipe-worker-task"
  role   = aws_iam_role.ecs_task[0].id
  policy = data.aws_iam_policy_document.ecs_task[0].json
}

# The worker receives and deletes its messages itself. Its logs go out through the execution
# role (awslogs driver), and the task runs no X-Ray daemon.
data "aws_iam_policy_document" "ecs_task" {
  count                   = local.ecs_worker_count
  source_policy_documents = [data.aws_iam_policy_document.downloader_code.json]

  # The main queue and each named feed's own queue, polled alike (copies: downloader_code).
  statement {
    sid       = "ReceiveDownloads"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage"]
    resources = concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)
  }

  # The worker lists the named feeds (every 60 s) to consume each one's own queue
  # (dlpipe/entrypoints/lanes.py): the path's own ARN, as GetParametersByPath is authorized.
  dynamic "statement" {
    for_each = length(var.feeds) > 0 ? ["feeds"] : []

    content {
      sid       = "ListFeeds"
      actions   = ["ssm:GetParametersByPath"]
      resources = ["arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:parameter${local.feeds_parameter_path}"]
    }
  }

  # The large-file queue's delayed copies are granted in downloader_code (CopyToLargeDownloads).
  statement {
    sid = "ConsumeLargeDownloads"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
    ]
    resources = aws_sqs_queue.downloads_large[*].arn
  }
}

# The execution role: what ECS needs to start the task (pull the image, ship the logs).
resource "aws_iam_role" "ecs_execution" {
  count              = local.ecs_worker_count
  name               = "${var.name_prefix}dlpipe-worker-execution"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

resource "aws_iam_role_policy" "ecs_execution" {
  count  = local.ecs_worker_count
  name   = "dlpipe-worker-execution"
  role   = aws_iam_role.ecs_execution[0].id
  policy = data.aws_iam_policy_document.ecs_execution.json
}

data "aws_iam_policy_document" "ecs_execution" {
  statement {
    sid       = "ShipLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for group in aws_cloudwatch_log_group.ecs_worker : "${group.arn}:*"]
  }

  dynamic "statement" {
    for_each = length(local.ecr_repository_arns) > 0 ? [1] : []

    content {
      sid       = "PullImage"
      actions   = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
      resources = local.ecr_repository_arns
    }
  }

  # ecr:GetAuthorizationToken has no resource-level permissions: AWS requires "*".
  dynamic "statement" {
    for_each = length(local.ecr_repository_arns) > 0 ? [1] : []

    content {
      sid       = "EcrLogin"
      actions   = ["ecr:GetAuthorizationToken"]
      resources = ["*"]
    }
  }
}

resource "aws_ecs_task_definition" "worker" {
  count                    = local.ecs_worker_count
  family                   = "${var.name_prefix}dlpipe-worker"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.ecs_worker_cpu
  memory                   = var.ecs_worker_memory_mb
  task_role_arn            = aws_iam_role.ecs_task[0].arn
  execution_role_arn       = aws_iam_role.ecs_execution[0].arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = "X86_64"
  }

  # The root filesystem is read-only; /tmp is a task-local scratch volume.
  volume {
    name = "tmp"
  }

  container_definitions = jsonencode([
    {
      name                   = "worker"
      image                  = var.ecs_worker_image
      essential              = true
      command                = ["dlpipe", "worker", "--concurrency", tostring(var.ecs_worker_concurrency)]
      readonlyRootFilesystem = true
      privileged             = false
      environment            = [for name, value in local.ecs_worker_environment : { name = name, value = value }]
      mountPoints            = [{ sourceVolume = "tmp", containerPath = "/tmp", readOnly = false }]
      # SIGTERM lets the worker finish or release its current claims before ECS stops it.
      stopTimeout = 120
      logConfiguration = {
        logDriver = "awslogs"
        options = {
          awslogs-group         = aws_cloudwatch_log_group.ecs_worker[0].name
          awslogs-region        = var.aws_region
          awslogs-stream-prefix = "worker"
        }
      }
    }
  ])

  lifecycle {
    precondition {
      condition     = var.ecs_worker_image != ""
      error_message = "enable_ecs_worker needs ecs_worker_image."
    }
  }
}

resource "aws_ecs_service" "worker" {
  count            = local.ecs_worker_count
  name             = "${var.name_prefix}dlpipe-worker"
  cluster          = aws_ecs_cluster.worker[0].id
  task_definition  = aws_ecs_task_definition.worker[0].arn
  desired_count    = var.ecs_worker_desired_count
  launch_type      = "FARGATE"
  platform_version = "LATEST"
  propagate_tags   = "SERVICE"

  network_configuration {
    subnets          = var.ecs_subnet_ids
    security_groups  = var.ecs_security_group_ids
    assign_public_ip = false
  }

  lifecycle {
    precondition {
      condition     = length(var.ecs_subnet_ids) > 0 && length(var.ecs_security_group_ids) > 0
      error_message = "enable_ecs_worker needs ecs_subnet_ids and ecs_security_group_ids."
    }
  }
}
