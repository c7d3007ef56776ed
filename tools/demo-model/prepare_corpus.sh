#!/usr/bin/env bash
# Rebuilds tools/demo-model/data/corpus.jsonl.xz, the demo model's training text, from Debian packages.
# Needs apt-get (Debian bookworm archive reachable), dpkg-deb, python3 (stdlib only) and xz.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d -t demo-corpus-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# Package versions used for the committed corpus (bookworm); apt-get download takes the candidate
# version, so a newer archive may differ slightly: prepare_corpus.py prints the versions it saw.
apt-get download fortunes fortunes-min bible-kjv bible-kjv-text
for deb in ./*.deb; do dpkg-deb -x "$deb" root; done
# The bible program decodes its own compressed text format; -f turns pretty-printing off
# (one verse per line, prefixed by its reference), -p says where bible.data lives.
"root/usr/bin/bible" -f -p root/usr/lib "Gen1:1-Rev22:21" > kjv.txt
python3 "$here/prepare_corpus.py" \
  --fortunes root/usr/share/games/fortunes \
  --kjv kjv.txt \
  --debs "$work" \
  --out "$here/data/corpus.jsonl"
xz -9e -T1 -f "$here/data/corpus.jsonl"
ls -l "$here/data/corpus.jsonl.xz"
