#!/usr/bin/env bash
# Debian's Chromium for the browser tests (the report and the MLflow UI, driven by Playwright
# with executable_path=/usr/bin/chromium: `playwright install` downloads are not used).
#
# Optional: without root (or apt-get) it installs nothing and says so; the browser tests then
# skip with that reason. Idempotent: does nothing when /usr/bin/chromium exists.
set -uo pipefail
source "$(dirname "$0")/apt_optional.sh"

if [[ -x /usr/bin/chromium ]]; then
  echo "install_chromium: /usr/bin/chromium present"
  exit 0
fi
apt_optional install_chromium "the browser tests" chromium chromium-driver
[[ -x /usr/bin/chromium ]] && echo "install_chromium: $(/usr/bin/chromium --version 2>/dev/null)"
exit 0
