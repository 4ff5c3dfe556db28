#!/usr/bin/env bash
# Tools for the `browser` tests (tests/workbench/test_browser.py): Debian's chromium, JupyterLab and
# Playwright for Python (driving /usr/bin/chromium; Playwright's own browsers are not downloaded).
# Idempotent; run inside the CI virtual environment.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
python -m pip install -q jupyterlab playwright
