# Two secrets, created empty: their values never pass through Terraform or its state.
# Set them once after the first apply (terraform/README.md, "Set the two secrets").

resource "aws_secretsmanager_secret" "rsa_private_key" {
  #checkov:skip=CKV2_AWS_57:The RSA key pair is issued with the provider, who wraps every file's AES key with our public key; it cannot be rotated by a Lambda on our side, only by a coordinated re-keying with the provider.
  name        = "${var.name_prefix}dlpipe/rsa-private-key"
  description = "PEM private key that unwraps the per-file AES keys (RSA-OAEP, SHA-256)."
  kms_key_id  = aws_kms_key.dlpipe.arn
}

resource "aws_secretsmanager_secret" "provider_token" {
  #checkov:skip=CKV2_AWS_57:The bearer token is issued by the data provider; there is no API on our side to mint a new one, so it is rotated by hand when the provider re-issues it.
  name        = "${var.name_prefix}dlpipe/provider-token"
  description = "Bearer token for the data provider's API."
  kms_key_id  = aws_kms_key.dlpipe.arn
}
