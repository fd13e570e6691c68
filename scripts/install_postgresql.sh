#!/usr/bin/env bash
# Debian's PostgreSQL server binaries for the tests of the shared response cache (a throwaway
# cluster per test session: tests/support/servers.py). No service is enabled or started.
#
# Optional: without root (or apt-get) it installs nothing and says so; those tests then skip
# with that reason. Idempotent: does nothing when initdb is found.
set -uo pipefail
source "$(dirname "$0")/apt_optional.sh"

if command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "install_postgresql: initdb present"
  exit 0
fi
# policy-rc.d exit 101: the package must not start a system cluster (containers, CI)
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ "$(id -u)" == 0 && ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
apt_optional install_postgresql "the PostgreSQL tests" postgresql
[[ $created_policy == 1 ]] && rm -f "$policy"
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && echo "install_postgresql: $(ls -d /usr/lib/postgresql/*/bin | tail -1)"
exit 0
