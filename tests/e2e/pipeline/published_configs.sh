#!/usr/bin/env bash
# A fixture checkpoint with its configs as the published Wan2.2 Diffusers repositories carry them
# (tools/reference/published_configs.py: clip_output, _name_or_path, an older _diffusers_version, transformers
# 4.51's text encoder config, the UMT5 tokenizer files with 300 extra ids and bos <s>, a key a newer release may
# add), against the same checkpoint unedited:
#   published_configs.sh GENERATE COMPARE NP CASE_DIR WORK VENV CLIP_OUTPUT WIDTH HEIGHT FRAMES STEPS [flags...]
# Both go through fixture_case.sh (diffusers' reference within the parity bounds); then every saved tensor of the
# edited run equals the unedited run's exactly, and its log has one warning line per edited file naming each key
# it ignores once (from rank 0 alone), the unedited run's none.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; np=$3; case_dir=$4; work=$5; venv=${REFERENCE_VENV:-$6}; clip=$7; shift 7
here=$(cd "$(dirname "$0")" && pwd)
need_venv "$venv"
rm -rf "$work"; mkdir -p "$work/case"
"$venv/bin/python" "$SOURCE_DIR/tools/reference/published_configs.py" "$case_dir/model" "$work/case/model" \
  --clip-output "$clip" > "$work/ignored.txt"
for f in expected.safetensors image.png; do [ -e "$case_dir/$f" ] && ln -s "$case_dir/$f" "$work/case/$f"; done

args=("$@")
run() {
  bash "$here/fixture_case.sh" "$gen" "$compare" "$np" "$2" "$work/$1" "${args[@]}" 2> "$work/$1.err" \
    > "$work/$1.out" || { cat "$work/$1.out" "$work/$1.err"; fail "the $1 run"; }
  tail -1 "$work/$1.out"
}
run plain "$case_dir"
run published "$work/case"
"$compare" "$work/published/tensors.safetensors" "$work/plain/tensors.safetensors" --tolerance 0 | tail -1

if grep -q "ignoring" "$work/plain.err"; then echo "FAIL: the unedited checkpoint warned:"; cat "$work/plain.err"; exit 1; fi
warnings=$(grep "ignoring key" "$work/published.err" || true)
echo "$warnings"
files=$(cut -d' ' -f1 "$work/ignored.txt" | sort -u)
want=$(wc -l <<<"$files")
got=$(grep -c "ignoring key" <<<"$warnings" || true)
[ "$got" = "$want" ] || fail "$got warning lines, expected $want (one per edited file)"
while read -r file key; do
  n=$(grep -c "/case/model/$file: ignoring key.*'$key'" <<<"$warnings" || true)
  [ "$n" = 1 ] || fail "'$key' of $file named on $n warning lines, expected 1"
  [ "$(grep -o "'$key'" <<<"$(grep "/case/model/$file: " <<<"$warnings")" | wc -l)" = 1 ] ||
    fail "'$key' named more than once for $file"
done < "$work/ignored.txt"
# Nothing else was ignored: each line names exactly the keys the edit added to its file.
while read -r line; do
  file=$(sed -E 's#.*/case/model/([^:]*): ignoring.*#\1#' <<<"$line")
  named=$(grep -o "'[^']*'" <<<"${line%%, unknown to*}" | tr -d "'" | sort | tr '\n' ' ')
  added=$(awk -v f="$file" '$1 == f {print $2}' "$work/ignored.txt" | sort | tr '\n' ' ')
  [ "$named" = "$added" ] || fail "$file: ignored [$named], the edit added [$added]"
done <<<"$warnings"
echo "ok: published configs of $(basename "$case_dir") on $np rank(s), clip_output $clip: same tensors, $got warning lines"
