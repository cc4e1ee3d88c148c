terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 6.25 is the first release with Lambda durable functions (durable_config).
      version = ">= 6.25"
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
