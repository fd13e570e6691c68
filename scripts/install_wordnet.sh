#!/usr/bin/env bash
# Install the WordNet 3.0 database files that genfair's occupation aliases need, offline-ready.
#
# PyPI has no maintained package shipping the NLTK-readable WordNet 3.0 files, so they come
# from Debian: `wordnet-base` (data.* / index.* files) and `wordnet-sense-index` (index.sense)
# install into /usr/share/wordnet. genfair.resources.wordnet.ensure_wordnet() then copies
# them into an nltk_data folder and adds the `lexnames` file Debian lacks.
#
# Idempotent: does nothing when the files are already there. Needs root (as CI has) or sudo.
set -euo pipefail

WORDNET_DIR="${GENFAIR_WORDNET_DIR:-/usr/share/wordnet}"
needed=(data.noun index.noun data.verb index.verb data.adj index.adj data.adv index.adv index.sense)

missing=0
for f in "${needed[@]}"; do
  [[ -s "$WORDNET_DIR/$f" ]] || missing=1
done
if [[ $missing -eq 0 ]]; then
  echo "install_wordnet: WordNet 3.0 files present in $WORDNET_DIR"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_wordnet: WordNet files missing in $WORDNET_DIR and apt-get is not available." >&2
  echo "  Install the Debian/Ubuntu packages wordnet-base and wordnet-sense-index (or set" >&2
  echo "  GENFAIR_NLTK_DATA to an nltk_data folder holding corpora/wordnet)." >&2
  exit 1
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_wordnet: not root and no sudo: run as root: bash scripts/install_wordnet.sh" >&2
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
echo "install_wordnet: installed WordNet 3.0 into $WORDNET_DIR"
