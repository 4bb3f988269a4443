#!/usr/bin/env bash
# Retake docs/viewer.png and docs/mlflow_ui.png from real runs on the embedded model
# (about 6 minutes on 2 cores): the README's main command, a rag run beside it, the viewer
# on both, `memorybench track`, then `mlflow ui` and headless Chromium on one run's page.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
work="$(mktemp -d)"; trap 'kill ${ui:-} 2>/dev/null || true; rm -rf "$work"' EXIT
mb() { .venv/bin/memorybench "$@" paths.packs="$work/packs"; }
mb qa memory=session_summaries max_questions=20
mb qa memory=rag max_questions=20
packs=("$work"/packs/default/runs/*)
.venv/bin/memorybench view "${packs[@]}" --out "$work/view.html" --title "conv-26: session summaries vs rag (embedded model)"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 --virtual-time-budget=10000 \
  --screenshot=docs/viewer.png "file://$work/view.html#open=conv-26-q-1"
(cd "$work" && "$repo/.venv/bin/memorybench" track packs/default >/dev/null)   # sqlite:///$work/mlflow.db
.venv/bin/mlflow ui --backend-store-uri "sqlite:///$work/mlflow.db" --workers 1 --port 5077 >/dev/null 2>&1 & ui=$!
until curl -s -o /dev/null http://127.0.0.1:5077/; do sleep 1; done
run=$(.venv/bin/python -c "import mlflow,sys; mlflow.set_tracking_uri('sqlite:///$work/mlflow.db'); print(mlflow.search_runs(['1'], filter_string=\"tags.\`memorybench.kind\` = 'run' and attributes.run_name LIKE 'session_summaries%'\")['run_id'][0])")
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2400 --virtual-time-budget=30000 \
  --screenshot="$work/mlflow.png" "http://127.0.0.1:5077/#/experiments/1/runs/$run"
.venv/bin/python -c "from PIL import Image; Image.open('$work/mlflow.png').crop((190, 0, 1040, 1500)).save('docs/mlflow_ui.png')"
echo "docs/viewer.png and docs/mlflow_ui.png retaken"
