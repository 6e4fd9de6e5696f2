#!/usr/bin/env bash
# Run by Snakemake inside the new conda env, from the project folder (the mcptrials checkout):
# install mcptrials and its pinned dependencies (pyproject.toml).
set -euo pipefail
python -m pip install --disable-pip-version-check --no-cache-dir .
