#!/usr/bin/env bash
# A JSON Lines batch with its own seeds, outputs and sizes per video, on 2 data-parallel groups whose HSDP shard
# group spans both (so they run in lockstep), killed (SIGKILL, as a preempted node) after 2 videos were written,
# then started again: exactly the 3 missing videos are generated, the 2 written ones are skipped without being
# touched, the summary and the report say so, and each video equals its own one-rank single-video run. A third
# start finds everything written and loads nothing. Lines that would break the lockstep are usage errors
# naming the line.
#   jsonl_resume.sh GENERATE COMPARE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; model=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --height 32 --width 48 --num-frames 5 --num-inference-steps 3 --max-sequence-length 16
        --dtype float32 --device cpu --guidance-scale 4 --guidance-scale-2 3 --log-level info)
cat > "$work/batch.jsonl" <<JSONL
{"prompt": "A red fox in the snow", "seed": 1, "output": "$work/fox.mp4"}
{"prompt": "A boat on a lake", "seed": 2, "output": "$work/boat.mp4", "num_frames": 9}

{"prompt": "A city at night", "seed": 3, "output": "$work/city.mp4", "negative_prompt": "daylight"}
{"prompt": "A kite over a hill", "seed": 4, "output": "$work/kite.mp4", "guidance_scale": 6}
{"prompt": "Rain on a window", "seed": 5, "output": "$work/rain.mp4", "height": 48}
JSONL
batch=(mpi 2 "$gen" "${common[@]}"
       --prompts-file "$work/batch.jsonl" --use-hsdp --hsdp-shard-size 2 --layout manual \
       --save-tensors "$work/t.safetensors")

# 1. Rank 0 (dp group 0: fox, then city) is killed at the first step of its second video; dp group 1 wrote the
#    boat before it could enter that round's gathers.
if OMNI_FAULT_INJECT=0:0:1:kill "${batch[@]}" --report "$work/report1.json" > "$work/run1.log" 2>&1; then
  echo "FAIL: the killed run exited 0"; cat "$work/run1.log"; exit 1
fi
written=$(cd "$work" && ls *.mp4 2>/dev/null | sort | tr '\n' ' ')
[ "$written" = "boat.mp4 fox.mp4 " ] || fail "after the kill: '$written', want boat and fox"
sums_before=$(cd "$work" && sha256sum fox.mp4 boat.mp4 fox.mp4.json boat.mp4.json)

# 2. Started again: the missing three, nothing else.
"${batch[@]}" --report "$work/report2.json" > "$work/run2.log" 2>&1 || { cat "$work/run2.log"; exit 1; }
grep -q "summary: 3 generated, 2 skipped (already written), 0 failed" "$work/run2.log" ||
  { echo "FAIL: summary"; cat "$work/run2.log"; exit 1; }
grep -q "skipping $work/fox.mp4: already written" "$work/run2.log" || fail "skip not said"
[ "$(cd "$work" && sha256sum fox.mp4 boat.mp4 fox.mp4.json boat.mp4.json)" = "$sums_before" ] ||
  fail "a written video was touched"
python3 - "$work/report2.json" "$work" <<'PY'
import json, sys
r, work = json.load(open(sys.argv[1])), sys.argv[2]
assert r["summary"] == {"generated": 3, "skipped": 2, "failed": 0}, r["summary"]
status = {v["output"].rsplit("/", 1)[1]: (v["status"], v["line"]) for v in r["videos"]}
assert status == {"fox.mp4": ("skipped", 1), "boat.mp4": ("skipped", 2), "city.mp4": ("generated", 4),
                  "kite.mp4": ("generated", 5), "rain.mp4": ("generated", 6)}, status
side = json.load(open(f"{work}/kite.mp4.json"))
assert side["prompts_file_line"] == 5 and side["settings"]["guidance-scale"] == 6, side["settings"]
assert side["sources"]["guidance-scale"].endswith("line 5"), side["sources"]
print("ok: report and sidecar")
PY

# 3. Each generated video against its own single-video run on one rank.
one() {  # one INDEX PROMPT SEED [flags...]
  local i=$1 prompt=$2 seed=$3; shift 3
  "$gen" "${common[@]}" --log-level warn --prompt "$prompt" --seed "$seed" "$@" --output "$work/one-$i.mp4" \
    --save-tensors "$work/one-$i.safetensors"
  "$cmp" "$work/t-000$i.safetensors" "$work/one-$i.safetensors" --keys prompt_embeds,latents,frames --tolerance 1e-5
}
one 2 "A city at night" 3 --negative-prompt daylight
one 3 "A kite over a hill" 4 --guidance-scale 6
one 4 "Rain on a window" 5 --height 48

# 4. Everything written: nothing to load. The same command again rewrites its own report.
"${batch[@]}" --report "$work/report2.json" > "$work/run3.log" 2>&1 || { cat "$work/run3.log"; exit 1; }
grep -q "summary: 0 generated, 5 skipped" "$work/run3.log" && ! grep -q "loaded in" "$work/run3.log" ||
  { echo "FAIL: the finished batch loaded or generated"; cat "$work/run3.log"; exit 1; }
grep -q '"skipped": 5' "$work/report2.json" || fail "the report was not rewritten"

# 5. Lines that break the lockstep, or are not options: usage errors naming the line, before any model is read.
bad() {  # bad NAME LINE TEXT
  printf '{"prompt": "ok"}\n%s\n' "$2" > "$work/bad.jsonl"
  local out code=0
  out=$("$gen" "${common[@]}" --prompts-file "$work/bad.jsonl" --output "$work/bad.mp4" 2>&1) || code=$?
  if [ "$code" != 2 ] || ! grep -qF -- "--prompts-file $work/bad.jsonl line 2: $3" <<<"$out" || grep -q "loaded in" <<<"$out"; then
    echo "FAIL: $1: exit $code"; echo "$out"; exit 1
  fi
  echo "ok: $1"
}
bad steps '{"prompt": "x", "num_inference_steps": 10}' "'num_inference_steps' cannot vary per video"
bad unknown '{"prompt": "x", "sed": 3}' "unknown key 'sed'; did you mean 'seed'?"
bad guidance_off '{"prompt": "x", "guidance_scale": 1}' "guidance_scale 1 turns guidance off"
bad not_json '{"prompt": "x",' "not valid JSON"
bad no_prompt '{"seed": 3}' 'no "prompt"'
bad bad_height '{"prompt": "x", "height": 30}' "--height must be a positive multiple of 16"
echo "ok: JSON Lines batch resumed after a kill"
