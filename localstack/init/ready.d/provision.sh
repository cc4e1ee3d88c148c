#!/usr/bin/env bash
# LocalStack runs this hook once its services are ready. It provisions dlpipe exactly as the
# embedded emulator is provisioned: `dlpipe local provision`, which reads the tables, queues
# and bucket from terraform/ (python-hcl2) and creates them at AWS_ENDPOINT_URL, idempotently.
#
# dlpipe is installed into its own virtualenv in the LocalStack data volume (first start
# only; needs the package index), never into LocalStack's Python.
# DLPIPE_PROVISION=skip turns the hook off (provision from the host instead).
set -euo pipefail

if [[ "${DLPIPE_PROVISION:-auto}" == "skip" ]]; then
  echo "dlpipe: DLPIPE_PROVISION=skip, leaving provisioning to the host"
  exit 0
fi

# The defaults are the container's paths; the overrides let the hook be tried outside it.
repo="${DLPIPE_REPO:-/opt/dlpipe}"                     # read-only mount of the repository
work="${DLPIPE_WORKDIR:-/var/lib/localstack}"          # LocalStack's persistent volume
endpoint="${DLPIPE_ENDPOINT_URL:-http://localhost:4566}"
src="$work/dlpipe-src"                                 # writable copy: pip builds in the tree
venv="$work/dlpipe-venv"

# A fresh copy every start, so that edits to terraform/ are provisioned. dlpipe finds
# terraform/ next to its own package, hence the editable install of this copy.
rm -rf "$src"
mkdir -p "$src"
for part in pyproject.toml README.md terraform dlpipe records provider downloader orchestrator ops; do
  cp -r "$repo/$part" "$src/"
done

if [[ ! -x "$venv/bin/dlpipe" ]]; then
  echo "dlpipe: installing dlpipe into $venv (first start only)"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$src" python-hcl2
fi

AWS_ENDPOINT_URL="$endpoint" \
  AWS_REGION="${AWS_DEFAULT_REGION:-us-east-1}" \
  AWS_ACCESS_KEY_ID=test \
  AWS_SECRET_ACCESS_KEY=test \
  "$venv/bin/dlpipe" local provision

echo "dlpipe: provisioned"
