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
