locals {
  is_prod = var.environment == "prod"

  jobs_table_name    = "${var.name_prefix}data-download-jobs"
  batches_table_name = "${var.name_prefix}data-download-batches"
}
