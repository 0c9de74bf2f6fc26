#!/usr/bin/env bash
# Fails (listing the files) when a tracked C++ file differs from what clang-format makes of it (.clang-format).
# tools/test.sh runs it before building; `git ls-files '*.cpp' '*.h' | xargs clang-format -i` fixes the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu')
bad=$(clang-format --dry-run "${files[@]}" 2>&1 | grep -o '^[^:]*:[0-9]*:[0-9]*: warning' | cut -d: -f1 | sort -u || true)
if [ -n "$bad" ]; then
  echo "check-format: these files are not clang-formatted ($(clang-format --version)):" >&2
  echo "$bad" | sed 's/^/  /' >&2
  echo "check-format: run: git ls-files '*.cpp' '*.h' | xargs clang-format -i" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
