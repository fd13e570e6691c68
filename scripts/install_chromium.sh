#!/usr/bin/env bash
# Debian's Chromium for the browser tests (the report and the MLflow UI, driven by Playwright
# with executable_path=/usr/bin/chromium: `playwright install` downloads are not used).
#
# Optional: without root (or apt-get) it installs nothing and says so; the browser tests then
# skip with that reason. Idempotent: does nothing when /usr/bin/chromium exists.
set -uo pipefail

if [[ -x /usr/bin/chromium ]]; then
  echo "install_chromium: /usr/bin/chromium present"
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: not root (or no apt-get): Chromium not installed; the browser tests will skip." >&2
  echo "  To run them: sudo apt-get install chromium chromium-driver" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null; then
  apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null \
    || echo "install_chromium: apt-get failed; the browser tests will skip." >&2
fi
[[ -x /usr/bin/chromium ]] && echo "install_chromium: $(/usr/bin/chromium --version 2>/dev/null)"
exit 0
