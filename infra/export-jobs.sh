#!/usr/bin/env bash
# Export the ACTIVE Cloud Run job definitions (what actually ran) into a results folder:
#   PROJECT=my-project infra/export-jobs.sh results/2025-01-01-sweep/cloudrun
# writes <folder>/memorybench-<job>.yaml with `gcloud run jobs describe --format=export`.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: PROJECT=... [REGION=us-central1] $0 FOLDER" >&2; exit 2; }
PROJECT="${PROJECT:-$(gcloud config get-value project 2>/dev/null)}"
REGION="${REGION:-us-central1}"
JOBS="${JOBS:-qa autorater aggregate collect-full}"
mkdir -p "$1"
for job in $JOBS; do
  gcloud run jobs describe "memorybench-$job" --region "$REGION" --project "$PROJECT" --format=export > "$1/memorybench-$job.yaml"
  echo "exported $1/memorybench-$job.yaml"
done
