# Named feeds (var.feeds): each one provider's daily delivery besides the default feed, which
# the top-level variables configure. Every resource here is for_each over the feed
# names, never count: adding or removing a feed creates or destroys only that feed's schedule
# (scheduler.tf), secrets and parameter, and adds or drops its statements in the two policies
# (iam.tf). With feeds = {} (the default) nothing here exists.

locals {
  # The secret each feed reads, by feed name: the one created for it, or the ARN it names.
  feed_token_secret_arns = {
    for name, feed in var.feeds : name => try(aws_secretsmanager_secret.feed_token[name].arn, feed.token_secret)
  }

  # Its own key (created), the key of the feed it names (created there, or that feed's ARN),
  # or an existing secret's ARN. Validation keeps sharing one level deep.
  feed_private_key_secret_arns = {
    for name, feed in var.feeds : name => try(
      aws_secretsmanager_secret.feed_private_key[coalesce(feed.private_key_secret, name)].arn,
      var.feeds[feed.private_key_secret].private_key_secret,
      feed.private_key_secret,
    )
  }

  # Where the functions find a feed's configuration: one parameter per feed under this path.
  feeds_parameter_path = "/${var.name_prefix}dlpipe/feeds"

  # Merged into the orchestrator's and the downloaders' environments (locals.tf), only when
  # there are named feeds: with feeds = {} the functions' environment has no feed variable (so a
  # deployment without named feeds publishes no new function version for them), and there is
  # no parameter to point at.
  feeds_environment = {
    for name, value in { DLPIPE_FEEDS_PARAMETER_PATH = local.feeds_parameter_path } : name => value if length(var.feeds) > 0
  }

  # The share rule of the downloaders (dlpipe/domain/lanes.py), merged into their environments
  # only with named feeds, like the path: alone, the default feed holds every downloader.
  downloaders_feeds_environment = {
    for name, value in { DLPIPE_MAX_SHARE_PERCENT = tostring(var.feed_max_share_percent) } : name => value if length(var.feeds) > 0
  }

  # The most downloader invocations a feed's event source mapping runs at once: its share
  # (its own max_share_percent, else feed_max_share_percent) of downloader_max_concurrency,
  # rounded down, as dlpipe/domain/lanes.py caps a lane, and at least 2 (the mapping's minimum).
  feed_max_concurrency = {
    for name, feed in var.feeds : name => max(2, floor(var.downloader_max_concurrency * coalesce(feed.max_share_percent, var.feed_max_share_percent) / 100))
  }

  # Feeds whose polling (their overrides, else the deployment's), with the outage budgets and
  # the setup margin, would outlast the durable execution: the orchestrator's precondition
  # (lambda_orchestrator.tf) names them, as it checks the default feed's polling.
  feeds_past_execution_timeout = sort([
    for name, feed in var.feeds : name
    if coalesce(feed.poll_interval_seconds, var.poll_interval_seconds) * coalesce(feed.max_polls, var.max_polls) + var.provider_outage_budget_seconds + var.aws_outage_budget_seconds + var.durable_setup_margin_seconds > var.durable_execution_timeout_seconds
  ])
}

# Created empty, like the default feed's two secrets: values never pass through Terraform.
resource "aws_secretsmanager_secret" "feed_token" {
  #checkov:skip=CKV2_AWS_57:Each feed's bearer token is issued by its data provider; there is no API on our side to mint a new one, so it is rotated by hand when the provider re-issues it.
  for_each = { for name, feed in var.feeds : name => feed if feed.token_secret == null }

  name        = "${var.name_prefix}dlpipe/feeds/${each.key}/provider-token"
  description = "Bearer token for the API of feed ${each.key}."
  kms_key_id  = aws_kms_key.dlpipe.arn
}

resource "aws_secretsmanager_secret" "feed_private_key" {
  #checkov:skip=CKV2_AWS_57:Each feed's RSA key pair is agreed with its provider, who wraps every file's AES key with our public key; it cannot be rotated by a Lambda on our side, only by a coordinated re-keying with the provider.
  for_each = { for name, feed in var.feeds : name => feed if feed.private_key_secret == null }

  name        = "${var.name_prefix}dlpipe/feeds/${each.key}/rsa-private-key"
  description = "PEM private key that unwraps the per-file AES keys of feed ${each.key} (RSA-OAEP, SHA-256)."
  kms_key_id  = aws_kms_key.dlpipe.arn
}

# A feed's settings reach the functions here, not in environment variables (Lambda allows
# 4 KB of them in all): one String parameter per feed, read by the orchestrator (the event
# names the feed) and the downloaders (the job's Feed). It holds settings and secret ARNs,
# never a secret value. Standard tier: up to 4 KB per feed.
resource "aws_ssm_parameter" "feed" {
  #checkov:skip=CKV2_AWS_34:The parameter holds a feed's non-secret settings and the ARNs of its secrets, never a secret value; the token and key live in Secrets Manager, encrypted with the dlpipe key.
  for_each = var.feeds

  name        = "${local.feeds_parameter_path}/${each.key}"
  description = "dlpipe feed ${each.key}: settings and secret ARNs (JSON)."
  type        = "String"
  tier        = "Standard"
  # Every field of the feed's entry as given (unset optional ones null), its name, its secrets
  # resolved to ARNs, and its own download queue (sqs.tf), which the orchestrator sends its
  # files to: a field added to var.feeds reaches the parameter by itself.
  value = jsonencode(merge(each.value, {
    name               = each.key
    token_secret       = local.feed_token_secret_arns[each.key]
    private_key_secret = local.feed_private_key_secret_arns[each.key]
    queue_url          = aws_sqs_queue.feed_downloads[each.key].url
  }))
}
