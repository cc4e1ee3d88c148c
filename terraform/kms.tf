# One customer-managed key encrypts dlpipe's data at rest (tables, queues, bucket, secrets).
resource "aws_kms_key" "dlpipe" {
  description             = "dlpipe data at rest"
  enable_key_rotation     = true
  deletion_window_in_days = 30
}

resource "aws_kms_alias" "dlpipe" {
  name          = "alias/${var.name_prefix}dlpipe"
  target_key_id = aws_kms_key.dlpipe.key_id
}
