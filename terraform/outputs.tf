output "jobs_table_name" {
  description = "Name of the jobs table (DLPIPE_JOBS_TABLE)."
  value       = aws_dynamodb_table.jobs.name
}

output "batches_table_name" {
  description = "Name of the batches table (DLPIPE_BATCHES_TABLE)."
  value       = aws_dynamodb_table.batches.name
}

output "queue_url" {
  description = "URL of the download queue (DLPIPE_QUEUE_URL)."
  value       = aws_sqs_queue.downloads.url
}

output "feed_queue_urls" {
  description = "URL of each named feed's own download queue, by feed name (each feed's parameter holds it as queue_url; the default feed's is queue_url)."
  value       = { for name, queue in aws_sqs_queue.feed_downloads : name => queue.url }
}

output "large_queue_url" {
  description = "URL of the large-file queue (DLPIPE_LARGE_QUEUE_URL), null without the ECS worker. Operators set it with DLPIPE_LARGE_FILE_THRESHOLD_BYTES so that `dlpipe jobs requeue` and `dlpipe dlq redrive` route large files there."
  value       = one(aws_sqs_queue.downloads_large[*].url)
}

output "large_file_threshold_bytes" {
  description = "DLPIPE_LARGE_FILE_THRESHOLD_BYTES the functions use: downloader timeout x 20 MiB/s x 1/2 (null without the ECS worker: no threshold)."
  value       = var.enable_ecs_worker ? local.large_file_threshold_bytes : null
}

output "dlq_url" {
  description = "URL of the download queue's dead-letter queue (DLPIPE_DLQ_URL)."
  value       = aws_sqs_queue.downloads_dlq.url
}

output "schedule_dlq_url" {
  description = "URL of the queue holding scheduled events that could not start the orchestrator."
  value       = aws_sqs_queue.schedule_dlq.url
}

output "orchestrator_dlq_url" {
  description = "URL of the orchestrator's dead-letter queue (executions that failed for good)."
  value       = aws_sqs_queue.orchestrator_dlq.url
}

output "destination_bucket" {
  description = "Name of the destination bucket (DLPIPE_DEST_BUCKET)."
  value       = aws_s3_bucket.destination.bucket
}

output "orchestrator_function_arn" {
  description = "Unqualified ARN of the orchestrator function (not invocable: use the alias)."
  value       = aws_lambda_function.orchestrator.arn
}

output "orchestrator_alias_arn" {
  description = "ARN of the orchestrator's \"live\" alias: what the schedule and operators invoke."
  value       = aws_lambda_alias.orchestrator_live.arn
}

output "orchestrator_published_version" {
  description = "Version this apply published; the alias points here unless orchestrator_live_version pins another."
  value       = aws_lambda_function.orchestrator.version
}

output "downloader_function_arn" {
  description = "ARN of the downloader function."
  value       = aws_lambda_function.downloader.arn
}

output "rsa_private_key_secret_arn" {
  description = "ARN of the secret to fill with the RSA private key (DLPIPE_PRIVATE_KEY_SECRET)."
  value       = aws_secretsmanager_secret.rsa_private_key.arn
}

output "provider_token_secret_arn" {
  description = "ARN of the secret to fill with the provider token (DLPIPE_PROVIDER_TOKEN_SECRET)."
  value       = aws_secretsmanager_secret.provider_token.arn
}

output "alarm_topic_arn" {
  description = "SNS topic every dlpipe alarm notifies; subscribe pagers or chat here."
  value       = aws_sns_topic.alarms.arn
}

output "kms_key_arn" {
  description = "ARN of the key that encrypts dlpipe's data at rest."
  value       = aws_kms_key.dlpipe.arn
}

output "feeds_parameter_path" {
  description = "SSM Parameter Store path under which each named feed's settings live, one String parameter per feed (<path>/<feed>, JSON)."
  value       = local.feeds_parameter_path
}

output "feeds" {
  description = "Per named feed: its schedule, its parameter, and the ARNs of its token and private-key secrets (fill the ones created here, as for the default feed's)."
  value = {
    for name, feed in var.feeds : name => {
      schedule_name              = aws_scheduler_schedule.feed[name].name
      parameter_name             = aws_ssm_parameter.feed[name].name
      token_secret_arn           = local.feed_token_secret_arns[name]
      token_secret_created       = feed.token_secret == null
      private_key_secret_arn     = local.feed_private_key_secret_arns[name]
      private_key_secret_created = feed.private_key_secret == null
    }
  }
}
