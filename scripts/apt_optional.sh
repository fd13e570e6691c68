#!/usr/bin/env bash
# apt_optional NAME WHAT PACKAGE...: install Debian packages that only some tests need.
# Without root (or apt-get) it installs nothing and says so (those tests then skip, saying
# why); a failed install is reported, never fatal. Sourced by scripts/install_*.sh.
apt_optional() {
  local name=$1 what=$2
  shift 2
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: not root (or no apt-get): not installed; $what will skip." >&2
    echo "  To run them: sudo apt-get install $*" >&2
    return 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "$@" >/dev/null; then
    apt-get update >/dev/null && apt-get install -y --no-install-recommends "$@" >/dev/null \
      || echo "$name: apt-get failed; $what will skip." >&2
  fi
}
