#!/usr/bin/env bash
# Stops with a one-line error when the file system holding DIR has less than GB gibibytes free, before an
# install or build fills it halfway (pip's "No space left on device" comes after minutes, and leaves a broken venv).
#
#   tools/free-space.sh DIR GB WHAT
#
# A fresh clone's tools/test.sh needs about 16 GB in all: .venv 4.6, tools/reference/.venv 5.3, build 3.4,
# and the tests' outputs under build.
set -euo pipefail
dir=$1; need=$2; what=$3
probe=$dir
while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
have=$(df -P -BG "$probe" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
if [ "$have" -lt "$need" ]; then
  echo "free-space: $what needs about $need GB free on the file system of $dir; it has $have GB (df -h $probe)" >&2
  exit 1
fi
