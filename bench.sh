for i in $(seq 200); do bash -c "set -euo pipefail; . /tmp/perf3/$1; _w run-trial --config x --model claude --out results/runs/a/b/c/transcript.json > /dev/null 2>&1"; done
