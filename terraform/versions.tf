terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # >= 6.25: the first release with Lambda durable functions (durable_config).
      # < 7.0: dynamodb.tf writes GSI keys as hash_key/range_key, deprecated since 6.29, and
      # the provider drops deprecated arguments only in a major release.
      # tests/infra/test_provider_schema.py (FEATURES) holds both bounds to what we use.
      version = ">= 6.25, < 7.0"
    }
  }
}

provider "aws" {
  region = var.aws_region

  default_tags {
    tags = {
      Project     = "dlpipe"
      Environment = var.environment
    }
  }
}
