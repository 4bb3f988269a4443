<#
.SYNOPSIS
  Build the memorybench worker image, push it to Artifact Registry, and deploy the Cloud Run
  jobs (memorybench-qa, -autorater, -aggregate, -collect-full) with `gcloud run jobs replace`.

.DESCRIPTION
  The PowerShell twin of infra/deploy.sh; same settings, same environment variables:
    PROJECT (required; default: gcloud's configured project)  REGION=us-central1
    REPOSITORY=memorybench  IMAGE_NAME=memorybench  TAG=<git short sha>
    SERVICE_ACCOUNT=memorybench-runner@PROJECT.iam.gserviceaccount.com
    OPENAI_SECRET=openai-api-key   (mounted as OPENAI_API_KEY, version latest)
    EXTRA_SECRETS=                 (NAME=secret:latest,... passed to --update-secrets)
    JOB_CPU=1 JOB_MEMORY=4Gi JOB_PARALLELISM=8 JOB_TIMEOUT=43200 JOB_MAX_RETRIES=2   (qa, autorater)
    AGGREGATE_CPU=1 AGGREGATE_MEMORY=4Gi                                            (aggregate)
    COLLECT_CPU=8 COLLECT_MEMORY=32Gi                                               (collect-full)

.EXAMPLE
  $env:PROJECT = "my-project"; ./infra/deploy.ps1
.EXAMPLE
  ./infra/deploy.ps1 -Project my-project -SkipBuild -Jobs qa,autorater
.EXAMPLE
  ./infra/deploy.ps1 -Project my-project -RenderOnly C:\tmp\jobs
#>
[CmdletBinding()]
param(
  [string]$Project = $env:PROJECT,
  [string[]]$Jobs = @("qa", "autorater", "aggregate", "collect-full"),
  [string]$RenderOnly = "",
  [switch]$SkipBuild
)
$ErrorActionPreference = "Stop"
Set-StrictMode -Version Latest

function Get-Setting([string]$Name, [string]$Default) {
  $value = [Environment]::GetEnvironmentVariable($Name)
  if ([string]::IsNullOrEmpty($value)) { return $Default } else { return $value }
}

function Get-Quietly([scriptblock]$Command) {
  # a native command's stderr must not stop the script (Windows PowerShell 5.1 turns it into an error)
  try { $out = & $Command 2>$null; if ($LASTEXITCODE -eq 0) { return $out } } catch { }
  return $null
}

function Invoke-Checked([string]$Exe, [string[]]$Arguments) {
  & $Exe @Arguments
  if ($LASTEXITCODE -ne 0) { throw "deploy.ps1: $Exe $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

$Here = $PSScriptRoot
$Repo = (Resolve-Path (Join-Path $Here "..")).Path

if ([string]::IsNullOrEmpty($Project)) { $Project = $env:GOOGLE_CLOUD_PROJECT }
if ([string]::IsNullOrEmpty($Project) -and -not $RenderOnly -and (Get-Command gcloud -ErrorAction SilentlyContinue)) {
  $Project = Get-Quietly { gcloud config get-value project }
}
if ([string]::IsNullOrEmpty($Project)) { throw "deploy.ps1: set -Project or `$env:PROJECT to your GCP project id" }

$gitSha = Get-Quietly { git -C $Repo rev-parse --short=12 HEAD }
if (-not $gitSha) { $gitSha = (Get-Date).ToUniversalTime().ToString("yyyyMMddHHmmss") }

$Values = [ordered]@{
  PROJECT          = $Project
  REGION           = Get-Setting "REGION" "us-central1"
  SERVICE_ACCOUNT  = Get-Setting "SERVICE_ACCOUNT" "memorybench-runner@$Project.iam.gserviceaccount.com"
  OPENAI_SECRET    = Get-Setting "OPENAI_SECRET" "openai-api-key"
  JOB_CPU          = Get-Setting "JOB_CPU" "1"
  JOB_MEMORY       = Get-Setting "JOB_MEMORY" "4Gi"
  JOB_PARALLELISM  = Get-Setting "JOB_PARALLELISM" "8"
  JOB_TIMEOUT      = Get-Setting "JOB_TIMEOUT" "43200"
  JOB_MAX_RETRIES  = Get-Setting "JOB_MAX_RETRIES" "2"
  AGGREGATE_CPU    = Get-Setting "AGGREGATE_CPU" "1"
  AGGREGATE_MEMORY = Get-Setting "AGGREGATE_MEMORY" "4Gi"
  COLLECT_CPU      = Get-Setting "COLLECT_CPU" "8"
  COLLECT_MEMORY   = Get-Setting "COLLECT_MEMORY" "32Gi"
}
$Repository = Get-Setting "REPOSITORY" "memorybench"
$ImageName = Get-Setting "IMAGE_NAME" "memorybench"
$Tag = Get-Setting "TAG" $gitSha
$ExtraSecrets = Get-Setting "EXTRA_SECRETS" ""
$Image = "$($Values.REGION)-docker.pkg.dev/$Project/$Repository/${ImageName}:$Tag"

if ($RenderOnly) {
  $Digest = Get-Setting "IMAGE_DIGEST" ("sha256:" + ("0" * 64))
} else {
  if (-not (Get-Command gcloud -ErrorAction SilentlyContinue)) { throw "deploy.ps1: gcloud is not installed (https://cloud.google.com/sdk/docs/install)" }
  if (-not $SkipBuild) {
    $commit = Get-Quietly { git -C $Repo rev-parse HEAD }; if (-not $commit) { $commit = "unknown" }
    Write-Host "building $Image with Cloud Build"
    Invoke-Checked "gcloud" @("builds", "submit", $Repo, "--project", $Project, "--config", (Join-Path $Here "cloudbuild.yaml"),
      "--substitutions", "_IMAGE=$Image,_GIT_COMMIT=$commit")
  }
  $Digest = (& gcloud artifacts docker images describe $Image --project $Project "--format=value(image_summary.digest)")
  if ($LASTEXITCODE -ne 0 -or -not $Digest) { throw "deploy.ps1: no digest for ${Image}: was it pushed?" }
}
# jobs run the image by digest: each pack's provenance names exactly what ran
$Values["IMAGE_DIGEST"] = $Digest.Trim()
$Values["IMAGE_REF"] = ($Image.Substring(0, $Image.LastIndexOf(":")) + "@" + $Values.IMAGE_DIGEST)

$Out = if ($RenderOnly) { $RenderOnly } else { Join-Path ([System.IO.Path]::GetTempPath()) ("memorybench-jobs-" + [guid]::NewGuid()) }
New-Item -ItemType Directory -Force -Path $Out | Out-Null

foreach ($job in $Jobs) {
  $template = Join-Path (Join-Path $Here "cloudrun") "$job.yaml"
  if (-not (Test-Path $template)) { throw "deploy.ps1: no job template $template (jobs: qa, autorater, aggregate, collect-full)" }
  $text = Get-Content -Raw -Path $template
  foreach ($key in $Values.Keys) { $text = $text.Replace('${' + $key + '}', [string]$Values[$key]) }
  if ($text.Contains('${')) { throw "deploy.ps1: ${template}: unfilled placeholders remain" }
  $rendered = Join-Path $Out "$job.yaml"
  [System.IO.File]::WriteAllText($rendered, $text)
  if ($RenderOnly) { Write-Host "rendered $rendered"; continue }
  Write-Host "deploying memorybench-$job ($($Values.IMAGE_REF))"
  Invoke-Checked "gcloud" @("run", "jobs", "replace", $rendered, "--region", $Values.REGION, "--project", $Project, "--quiet")
  if ($ExtraSecrets) {
    Invoke-Checked "gcloud" @("run", "jobs", "update", "memorybench-$job", "--region", $Values.REGION, "--project", $Project,
      "--update-secrets", $ExtraSecrets, "--quiet")
  }
}
if (-not $RenderOnly) {
  Write-Host "deployed; run a sweep with: memorybench qa -m ... storage=gcs storage.root=gs://BUCKET/packs hydra/launcher=cloudrun hydra.launcher.project=$Project hydra.launcher.region=$($Values.REGION)"
}
