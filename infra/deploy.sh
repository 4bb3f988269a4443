#!/usr/bin/env bash
# Build the worker image, push it to Artifact Registry, and deploy memorybench's Cloud Run
# jobs (memorybench-qa, -autorater, -aggregate, -collect-full) with `gcloud run jobs replace`.
#
#   PROJECT=my-project infra/deploy.sh                  build, push, deploy all four jobs
#   PROJECT=my-project infra/deploy.sh --skip-build     redeploy the image already pushed for TAG
#   PROJECT=my-project infra/deploy.sh --jobs "qa autorater"
#   PROJECT=my-project infra/deploy.sh --render-only DIR  write the job YAML to DIR, call nothing
#
# Settings (environment; defaults after =):
#   PROJECT (required; default: gcloud's configured project)  REGION=us-central1
#   REPOSITORY=memorybench  IMAGE_NAME=memorybench  TAG=<git short sha>
#   SERVICE_ACCOUNT=memorybench-runner@PROJECT.iam.gserviceaccount.com
#   OPENAI_SECRET=openai-api-key      Secret Manager secret mounted as OPENAI_API_KEY (version: latest)
#   EXTRA_SECRETS=                    more secrets, as for --update-secrets: NAME=secret:latest,...
#   JOB_CPU=1 JOB_MEMORY=4Gi JOB_PARALLELISM=8 JOB_TIMEOUT=43200 JOB_MAX_RETRIES=2   (qa, autorater)
#   AGGREGATE_CPU=1 AGGREGATE_MEMORY=4Gi                                            (aggregate)
#   COLLECT_CPU=8 COLLECT_MEMORY=32Gi                                               (collect-full)
# Cloud Run allows at most 4Gi with 1 vCPU, 8Gi with 2, 16Gi with 4, 32Gi with 8.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
die() { echo "deploy.sh: $*" >&2; exit 2; }

RENDER_ONLY=""
SKIP_BUILD=0
JOBS="qa autorater aggregate collect-full"
while [ $# -gt 0 ]; do
  case "$1" in
    --render-only) [ $# -ge 2 ] || die "--render-only needs a folder"; RENDER_ONLY="$2"; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a list"; JOBS="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

if [ -z "${PROJECT:-}" ]; then
  PROJECT="${GOOGLE_CLOUD_PROJECT:-}"
  if [ -z "$PROJECT" ] && [ -z "$RENDER_ONLY" ] && command -v gcloud >/dev/null; then
    PROJECT="$(gcloud config get-value project 2>/dev/null || true)"
  fi
fi
[ -n "${PROJECT:-}" ] || die "set PROJECT=<your GCP project id>"
REGION="${REGION:-us-central1}"
REPOSITORY="${REPOSITORY:-memorybench}"
IMAGE_NAME="${IMAGE_NAME:-memorybench}"
TAG="${TAG:-$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || date -u +%Y%m%d%H%M%S)}"
SERVICE_ACCOUNT="${SERVICE_ACCOUNT:-memorybench-runner@${PROJECT}.iam.gserviceaccount.com}"
OPENAI_SECRET="${OPENAI_SECRET:-openai-api-key}"
EXTRA_SECRETS="${EXTRA_SECRETS:-}"
JOB_CPU="${JOB_CPU:-1}"
JOB_MEMORY="${JOB_MEMORY:-4Gi}"
JOB_PARALLELISM="${JOB_PARALLELISM:-8}"
JOB_TIMEOUT="${JOB_TIMEOUT:-43200}"
JOB_MAX_RETRIES="${JOB_MAX_RETRIES:-2}"
AGGREGATE_CPU="${AGGREGATE_CPU:-1}"
AGGREGATE_MEMORY="${AGGREGATE_MEMORY:-4Gi}"
COLLECT_CPU="${COLLECT_CPU:-8}"
COLLECT_MEMORY="${COLLECT_MEMORY:-32Gi}"
IMAGE="${REGION}-docker.pkg.dev/${PROJECT}/${REPOSITORY}/${IMAGE_NAME}:${TAG}"

if [ -n "$RENDER_ONLY" ]; then
  IMAGE_DIGEST="${IMAGE_DIGEST:-sha256:0000000000000000000000000000000000000000000000000000000000000000}"
else
  command -v gcloud >/dev/null || die "gcloud is not installed (https://cloud.google.com/sdk/docs/install)"
  if [ "$SKIP_BUILD" = 0 ]; then
    echo "building $IMAGE with Cloud Build"
    gcloud builds submit "$REPO" --project "$PROJECT" --config "$HERE/cloudbuild.yaml" \
      --substitutions "_IMAGE=$IMAGE,_GIT_COMMIT=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  fi
  IMAGE_DIGEST="$(gcloud artifacts docker images describe "$IMAGE" --project "$PROJECT" --format='value(image_summary.digest)')"
  [ -n "$IMAGE_DIGEST" ] || die "no digest for $IMAGE: was it pushed?"
fi
# jobs run the image by digest: the pack's provenance names exactly what ran
IMAGE_REF="${IMAGE%:*}@${IMAGE_DIGEST}"

render() {  # render TEMPLATE OUT
  sed -e "s|\${PROJECT}|${PROJECT}|g" -e "s|\${REGION}|${REGION}|g" \
      -e "s|\${IMAGE_REF}|${IMAGE_REF}|g" -e "s|\${IMAGE_DIGEST}|${IMAGE_DIGEST}|g" \
      -e "s|\${SERVICE_ACCOUNT}|${SERVICE_ACCOUNT}|g" -e "s|\${OPENAI_SECRET}|${OPENAI_SECRET}|g" \
      -e "s|\${JOB_CPU}|${JOB_CPU}|g" -e "s|\${JOB_MEMORY}|${JOB_MEMORY}|g" \
      -e "s|\${JOB_PARALLELISM}|${JOB_PARALLELISM}|g" -e "s|\${JOB_TIMEOUT}|${JOB_TIMEOUT}|g" \
      -e "s|\${JOB_MAX_RETRIES}|${JOB_MAX_RETRIES}|g" \
      -e "s|\${AGGREGATE_CPU}|${AGGREGATE_CPU}|g" -e "s|\${AGGREGATE_MEMORY}|${AGGREGATE_MEMORY}|g" \
      -e "s|\${COLLECT_CPU}|${COLLECT_CPU}|g" -e "s|\${COLLECT_MEMORY}|${COLLECT_MEMORY}|g" \
      "$1" > "$2"
  if grep -n '\${' "$2" >&2; then die "$2: unfilled placeholders above"; fi
}

OUT="${RENDER_ONLY:-$(mktemp -d)}"
mkdir -p "$OUT"
for job in $JOBS; do
  template="$HERE/cloudrun/$job.yaml"
  [ -f "$template" ] || die "no job template $template (jobs: qa autorater aggregate collect-full)"
  render "$template" "$OUT/$job.yaml"
  if [ -n "$RENDER_ONLY" ]; then
    echo "rendered $OUT/$job.yaml"
    continue
  fi
  echo "deploying memorybench-$job ($IMAGE_REF)"
  gcloud run jobs replace "$OUT/$job.yaml" --region "$REGION" --project "$PROJECT" --quiet
  if [ -n "$EXTRA_SECRETS" ]; then
    gcloud run jobs update "memorybench-$job" --region "$REGION" --project "$PROJECT" --update-secrets "$EXTRA_SECRETS" --quiet
  fi
done
[ -n "$RENDER_ONLY" ] || echo "deployed; run a sweep with: memorybench qa -m ... storage=gcs storage.root=gs://BUCKET/packs hydra/launcher=cloudrun hydra.launcher.project=$PROJECT hydra.launcher.region=$REGION"
