#!/usr/bin/env bash
# The GPU machine's check, run from the repository root there: bash tools/gpu/check.sh [OUTDIR]
#
#   unpack         .gpu-deps/debs/*.deb (tools/gpu/fetch-deps.sh) into a private prefix ($OMNI_DEPS_PREFIX,
#                  default /tmp/omni-deps), with the stand-in libraries the machine lacks, relocated Open MPI
#                  and pkg-config files, and wrappers in PREFIX/bin (mpirun, mpicxx, ffprobe, ffmpeg, pkg-config)
#   configure      cmake -G Ninja into build-gpu/ against that prefix and the torch of $TORCH_PYTHON
#   build          the gpu-labelled tests' executables, forward_bench, omni-generate and omni-compare
#                  (GPU_CHECK_TARGETS=all: everything; or a list of target names), -j$(nproc), ccache if present
#   ctest          ctest -L gpu --output-on-failure
#   forward_bench  build-gpu/tools/bench/forward_bench --device cuda --dtype bfloat16 --vae-dtype bfloat16 --json OUTDIR/forward_bench.json
#
# Each stage has its own timeout, cut so that the whole run ends within $CHECK_BUDGET_S seconds (470); a failed
# stage is reported and the next ones that can still run do. It ends with one summary table (also in
# OUTDIR/summary.txt). OUTDIR (default $OUT, else ./gpu-check-out) receives at most 6 files: check.log (every
# stage in full), ctest.log (ctest's output and its LastTest.log), forward_bench.log, forward_bench.json,
# system.txt (GPU, driver, toolchain, environment) and summary.txt. Exit code 0 when every stage passed.
#
# Environment: TORCH_PYTHON (/opt/torch/.venv/bin/python3), OMNI_DEPS_PREFIX, BUILD_DIR (build-gpu), JOBS,
# CHECK_BUDGET_S, T_UNPACK T_CONFIGURE T_BUILD T_CTEST T_BENCH (per-stage caps, seconds), GPU_CHECK_TARGETS,
# CMAKE_ARGS (extra configure flags), CTEST_ARGS (extra ctest flags), FORWARD_BENCH_ARGS (extra flags).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/tools/gpu/check.sh"
cd "$ROOT" || exit 2

# ---- settings, shared with the stage subprocesses ------------------------------------------------------------
export P=${OMNI_DEPS_PREFIX:-/tmp/omni-deps}
export PL="$P/usr/lib/x86_64-linux-gnu"
export BUILD_DIR=${BUILD_DIR:-build-gpu}
export TORCH_PYTHON=${TORCH_PYTHON:-/opt/torch/.venv/bin/python3}
export JOBS=${JOBS:-$(nproc 2>/dev/null || echo 16)}
export DEPS_DIR="$ROOT/.gpu-deps"
# What the prefix's programs and libraries need at run time (the stage 'unpack' puts everything there).
export RUN_LD="$PL:$PL/openmpi/lib:$P/stubs"
export OPAL_PREFIX="$P/usr" OPAL_SYSCONFDIR="$P/etc/openmpi" PMIX_PREFIX="$PL/pmix2" PMIX_DATADIR="$PL/pmix2/share" PMIX_LIBDIR="$PL/pmix2/lib"
export HWLOC_PLUGINS_PATH="$PL/hwloc"   # never the host's hwloc plug-ins
export PATH="$P/bin:$PATH"             # wrappers only (mpirun, mpicxx, ffprobe, pkg-config, ...)
export PKG_CONFIG_PATH="$PL/pkgconfig:$P/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CPATH="$P/usr/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$PL${LIBRARY_PATH:+:$LIBRARY_PATH}"
# Open MPI on one node of a container: as root, no ssh needed, no CMA single-copy (often blocked), no noise
# about the transport plug-ins set aside.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}

# Libraries and programs of the prefix that must load (checked after unpacking).
MUST_LOAD=(usr/bin/orterun usr/bin/orted usr/bin/opal_wrapper usr/bin/ffprobe usr/bin/ffmpeg usr/bin/pkgconf
  "usr/lib/x86_64-linux-gnu/libmpi.so.40" "usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40"
  "usr/lib/x86_64-linux-gnu/libavcodec.so.59" "usr/lib/x86_64-linux-gnu/libavformat.so.59"
  "usr/lib/x86_64-linux-gnu/libswscale.so.6" "usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7"
  "usr/lib/x86_64-linux-gnu/libsentencepiece.so.0" "usr/lib/x86_64-linux-gnu/libsentencepiece_train.so.0")
# SONAMEs that fetch-deps.sh neither sends nor stands in for: the machine must have them.
HOST_SONAMES=(libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libz.so.1)

log() { echo "check: $*"; }
host_has() {  # SONAME: in the loader's cache (a 64-bit file that exists) or in the caller's LD_LIBRARY_PATH
  local f d
  for f in $(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ { print $NF }'); do
    [ -e "$f" ] && return 0
  done
  local IFS=:
  for d in ${HOST_LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -e "$d/$1" ] && return 0; done
  return 1
}
run_env() { export LD_LIBRARY_PATH="$RUN_LD${HOST_LD_LIBRARY_PATH:+:$HOST_LD_LIBRARY_PATH}"; }

# ---- the stages (run as 'check.sh --stage NAME' under timeout) ---------------------------------------------------
stage_unpack() {
  shopt -s nullglob
  local debs=("$DEPS_DIR"/debs/*.deb)
  if [ ${#debs[@]} -eq 0 ]; then
    echo "ERROR: run tools/gpu/fetch-deps.sh first: .gpu-deps/debs is empty (and send .gpu-deps with the tree)"
    return 1
  fi
  [ -d "$DEPS_DIR/stubs" ] || { echo "ERROR: .gpu-deps/stubs is missing: run tools/gpu/fetch-deps.sh"; return 1; }
  local s missing=0
  for s in "${HOST_SONAMES[@]}"; do host_has "$s" || { echo "ERROR: this machine has no $s"; missing=1; }; done
  [ $missing -eq 0 ] || return 1
  case "$P" in /|/usr|/usr/*|"") echo "ERROR: OMNI_DEPS_PREFIX=$P: a private folder is needed"; return 1 ;; esac

  echo "unpacking ${#debs[@]} .debs into $P"
  if [ -e "$P" ] && [ ! -e "$P/.omni-deps" ] && [ -n "$(ls -A "$P" 2>/dev/null)" ]; then
    echo "ERROR: $P exists and was not made by this script: set OMNI_DEPS_PREFIX to a new folder"; return 1
  fi
  rm -rf "$P" && mkdir -p "$P" && touch "$P/.omni-deps" || return 1
  local f have_dpkg=0
  dpkg-deb --version >/dev/null 2>&1 && have_dpkg=1
  for f in "${debs[@]}"; do
    if [ $have_dpkg = 1 ]; then
      dpkg-deb -x "$f" "$P" || { echo "ERROR: dpkg-deb -x $f failed"; return 1; }
    else  # no dpkg: a .deb is an ar archive holding data.tar.{xz,zst,gz}
      local member z
      member=$(ar t "$f" | grep '^data\.tar') || { echo "ERROR: cannot read $f (no dpkg-deb, and ar failed)"; return 1; }
      case $member in *.xz) z=-J ;; *.zst) z=--zstd ;; *.gz) z=-z ;; *) z= ;; esac
      ar p "$f" "$member" | tar -x $z -C "$P" -f - || { echo "ERROR: cannot unpack $f (no dpkg-deb; ar | tar failed)"; return 1; }
    fi
  done
  # Absolute symbolic links point into the prefix.
  local l
  while IFS= read -r -d '' l; do ln -sfn "$P$(readlink "$l")" "$l"; done < <(find "$P" -type l -lname '/*' -print0)

  # Stand-ins, except for what this machine has for real.
  mkdir -p "$P/stubs" "$P/set-aside"
  local n_stub=0 n_real=0 real_list=""
  for f in "$DEPS_DIR"/stubs/*.so*; do
    s=$(basename "$f")
    if host_has "$s"; then n_real=$((n_real + 1)); real_list+=" $s"; else cp "$f" "$P/stubs/"; n_stub=$((n_stub + 1)); fi
  done
  echo "stand-ins: $n_stub used; $n_real not needed, this machine has them:$real_list"

  # pkg-config files: /usr -> the prefix.
  while IFS= read -r -d '' f; do
    sed -i -E "s#(=|-I|-L|[[:space:]])/usr([/[:space:]]|\$)#\\1$P/usr\\2#g" "$f"
  done < <(find "$P" -name '*.pc' -print0)

  # Wrappers: each program with the prefix's libraries and Open MPI's relocation.
  mkdir -p "$P/bin"
  local w target
  for w in mpirun:orterun mpiexec:orterun orterun:orterun orted:orted ompi_info:ompi_info \
           mpicxx:opal_wrapper mpic++:opal_wrapper mpicc:opal_wrapper ffprobe:ffprobe ffmpeg:ffmpeg \
           pkg-config:pkgconf pkgconf:pkgconf; do
    target="$P/usr/bin/${w#*:}"
    [ -x "$target" ] || { echo "ERROR: $target missing from the .debs"; return 1; }
    cat > "$P/bin/${w%%:*}" <<EOF
#!/bin/bash
# tools/gpu/check.sh: ${w%%:*} from $P
export LD_LIBRARY_PATH="$RUN_LD\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$OPAL_PREFIX" OPAL_SYSCONFDIR="$OPAL_SYSCONFDIR" PMIX_PREFIX="$PMIX_PREFIX" PMIX_DATADIR="$PMIX_DATADIR" PMIX_LIBDIR="$PMIX_LIBDIR"
export HWLOC_PLUGINS_PATH="$HWLOC_PLUGINS_PATH"
exec -a "${w%%:*}" "$target" "\$@"
EOF
    chmod +x "$P/bin/${w%%:*}"
  done
  # mpicxx's wrapper data under the name it is called by.
  for w in mpicxx mpic++ mpicc; do
    [ -e "$P/usr/share/openmpi/$w-wrapper-data.txt" ] ||
      ln -sfn "$w.openmpi-wrapper-data.txt" "$P/usr/share/openmpi/$w-wrapper-data.txt" 2>/dev/null
  done

  # Open MPI and PMIx plug-ins that cannot load here (UCX, libfabric, PSM, verbs, netlink...) are set aside.
  run_env
  local aside=""
  for f in "$PL"/openmpi/lib/openmpi3/*.so "$PL"/pmix2/lib/pmix/*.so; do
    if [ "$(ldd "$f" 2>&1 | grep -c 'not found')" != 0 ]; then aside+=" $(basename "$f" .so)"; mv "$f" "$P/set-aside/"; fi
  done
  echo "MPI plug-ins set aside (their libraries are not here):${aside:- none}"

  # Everything the project uses must load.
  local bad=0 out
  for f in "${MUST_LOAD[@]}"; do
    out=$(ldd "$P/$f" 2>&1 | grep -E 'not found|not a dynamic' || true)
    [ -z "$out" ] || { echo "ERROR: $P/$f cannot load: $out"; bad=1; }
  done
  [ $bad -eq 0 ] || return 1
  echo "--- smoke tests"
  local name
  for name in "mpirun --version" "ffprobe -version" "pkg-config --modversion libavcodec libavformat libavutil libswscale sentencepiece"; do
    out=$(timeout 30 $name 2>&1) || { echo "ERROR: '$name' failed: $out"; return 1; }
    echo "$name: $(head -1 <<<"$out")"
  done
  out=$(timeout 60 mpirun --oversubscribe -np 2 hostname 2>&1) || { echo "ERROR: mpirun -np 2 hostname failed: $out"; return 1; }
  echo "mpirun -np 2 hostname: $(echo $out)"
}

stage_configure() {
  [ -x "$TORCH_PYTHON" ] || { echo "ERROR: no python at TORCH_PYTHON=$TORCH_PYTHON"; return 1; }
  command -v cmake >/dev/null || { echo "ERROR: no cmake on PATH"; return 1; }
  command -v g++ >/dev/null || command -v c++ >/dev/null || { echo "ERROR: no C++ compiler (g++) on PATH"; return 1; }
  local gen=(-G Ninja)
  command -v ninja >/dev/null || { echo "WARNING: no ninja on PATH: Unix Makefiles"; gen=(-G "Unix Makefiles"); }
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && ! grep -q "^CMAKE_PREFIX_PATH:.*=$P/usr$" "$BUILD_DIR/CMakeCache.txt"; then
    echo "$BUILD_DIR was configured differently: starting afresh"; rm -rf "$BUILD_DIR"
  fi
  [ -f "$BUILD_DIR/CMakeCache.txt" ] && gen=()   # an existing build dir keeps its generator
  local links="-Wl,-rpath-link,$PL:$PL/openmpi/lib:$P/stubs"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DOMNI_TORCH_PYTHON="$TORCH_PYTHON" \
    -DCMAKE_PREFIX_PATH="$P/usr" \
    -DMPI_CXX_COMPILER="$P/bin/mpicxx" -DMPIEXEC_EXECUTABLE="$P/bin/mpiexec" \
    -DPKG_CONFIG_EXECUTABLE="$P/bin/pkg-config" \
    -DSTB_INCLUDE_DIR="$P/usr/include/stb" \
    -DCMAKE_EXE_LINKER_FLAGS="$links" -DCMAKE_SHARED_LINKER_FLAGS="$links" \
    ${CMAKE_ARGS:-} || return 1
  echo "--- where CMake found each dependency ($BUILD_DIR/CMakeCache.txt)"
  grep -E '^(Torch_DIR|OMNI_WITH_CUDA|NCCL_LIBRARY|CMAKE_CUDA_COMPILER|MPI_CXX_COMPILER|MPIEXEC_EXECUTABLE|MPI_mpi_LIBRARY|MPI_mpi_cxx_LIBRARY|MPI_CXX_HEADER_DIR|CLI11_DIR|yaml-cpp_DIR|nlohmann_json_DIR|GTest_DIR|GTEST_[A-Z_]*LIBRARY|STB_INCLUDE_DIR|SENTENCEPIECE_TRAIN_LIB|PKG_CONFIG_EXECUTABLE|CMAKE_CXX_COMPILER|CMAKE_CXX_COMPILER_LAUNCHER)[:=]' \
    "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
  grep -E '^(FFMPEG_INCLUDE_DIRS|SENTENCEPIECE_INCLUDE_DIRS):INTERNAL=|^pkgcfg_lib_[^:]*:FILEPATH=' "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
  local elsewhere
  elsewhere=$(grep -E '^(CLI11_DIR|yaml-cpp_DIR|nlohmann_json_DIR|GTest_DIR|MPI_mpi_LIBRARY|STB_INCLUDE_DIR|SENTENCEPIECE_TRAIN_LIB|pkgcfg_lib_FFMPEG_[a-z]*):' \
    "$BUILD_DIR/CMakeCache.txt" | grep -v "=$P/" || true)
  [ -z "$elsewhere" ] || echo "WARNING: found outside $P: $elsewhere"
}

stage_build() {
  local targets=() t
  if [ "${GPU_CHECK_TARGETS:-auto}" = all ]; then
    targets=()
  elif [ "${GPU_CHECK_TARGETS:-auto}" != auto ]; then
    read -r -a targets <<<"$GPU_CHECK_TARGETS"
  else
    # The executables that the gpu-labelled tests run (any argument of theirs that is a file the build makes),
    # with forward_bench, omni-generate and omni-compare.
    local known
    known=$(cd "$BUILD_DIR" && { ninja -t targets all 2>/dev/null || true; } | sed 's/: .*//')
    local wanted
    wanted=$(cd "$BUILD_DIR" && ctest -L gpu --show-only=json-v1 2>/dev/null |
      "$TORCH_PYTHON" -c '
import json, os, re, sys
b = os.path.realpath(sys.argv[1])
try:
    tests = json.load(sys.stdin).get("tests", [])
except Exception:
    tests = []
names = {t.get("name") for t in tests}
print("# %d" % len(tests))
args = []
for t in tests:
    args += t.get("command", []) or []
# ctest leaves out the command of a test whose executable is not built yet: the CTestTestfile.cmake files have it.
for d, _, files in os.walk(b):
    if "CTestTestfile.cmake" in files:
        for line in open(os.path.join(d, "CTestTestfile.cmake"), errors="replace"):
            m = re.match(r"add_test\((?:\[=\[(.*?)\]=\]|(\S+))\s+(.*)\)\s*$", line)
            if m and (m.group(1) or m.group(2)) in names:
                args += re.findall(r"\"([^\"]*)\"", m.group(3)) + re.findall(r"\[=\[(.*?)\]=\]", m.group(3))
seen = set()
for a in args:
    r = os.path.realpath(a) if os.path.isabs(a) else ""
    if r.startswith(b + "/") and r not in seen:
        seen.add(r)
        print(os.path.relpath(r, b))
' "$BUILD_DIR")
    echo "gpu-labelled tests: $(sed -n 's/^# //p' <<<"$wanted")"
    for t in $(grep -v '^#' <<<"$wanted") forward_bench omni-generate omni-compare; do
      if grep -qxF -- "$t" <<<"$known" && [[ " ${targets[*]} " != *" $t "* ]]; then targets+=("$t"); fi
    done
    [ ${#targets[@]} -gt 0 ] || { echo "no targets found: building everything"; targets=(); }
  fi
  echo "building: ${targets[*]:-everything} (-j$JOBS)"
  if [ -f "$BUILD_DIR/build.ninja" ]; then
    ninja -C "$BUILD_DIR" -k 0 -j "$JOBS" "${targets[@]}"
  else
    cmake --build "$BUILD_DIR" -j "$JOBS" ${targets[@]:+--target "${targets[@]}"} -- -k
  fi
}

stage_ctest() {
  run_env
  cd "$BUILD_DIR" || return 1
  # shellcheck disable=SC2086
  ctest -L gpu --output-on-failure --no-tests=error --timeout "${CTEST_TEST_TIMEOUT:-300}" ${CTEST_ARGS:-}
}

stage_forward_bench() {
  run_env
  local bin="$BUILD_DIR/tools/bench/forward_bench"
  [ -x "$bin" ] || { echo "ERROR: $bin was not built"; return 1; }
  # bfloat16 throughout, the VAE too: the anchors (diffusers on one H200) were measured so.
  # shellcheck disable=SC2086
  "$bin" --device cuda --dtype bfloat16 --vae-dtype bfloat16 --json "$OUTDIR/forward_bench.json" ${FORWARD_BENCH_ARGS:-}
}

if [ "${1:-}" = --stage ]; then
  "stage_$2"
  exit $?
fi

# ---- the driver ----------------------------------------------------------------------------------------------------
OUTDIR=${1:-${OUT:-$ROOT/gpu-check-out}}
mkdir -p "$OUTDIR" || { echo "check: cannot make $OUTDIR"; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
export OUTDIR
export HOST_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
LOGF="$OUTDIR/check.log"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/omni-check.XXXXXX")
: > "$LOGF"
START=$(date +%s)
DEADLINE=$((START + ${CHECK_BUDGET_S:-470}))

declare -A STATUS=() SECS=() NOTE=()
STAGES=(unpack configure build ctest forward_bench)

# run_stage NAME CAP RESERVE: runs under a timeout of min(CAP, time left - RESERVE for the later stages).
run_stage() {
  local name=$1 cap=$2 reserve=$3 now left t rc t0
  now=$(date +%s); left=$((DEADLINE - now - reserve)); t=$cap
  [ "$left" -lt "$t" ] && t=$left
  if [ "$t" -lt 15 ]; then
    STATUS[$name]=SKIP; SECS[$name]=0; NOTE[$name]="no time left"; log "[$name] skipped: no time left"; return 1
  fi
  log "[$name] start (timeout ${t}s)"
  { echo; echo "======== [$name] $(date -u +%H:%M:%S) timeout ${t}s"; } >> "$LOGF"
  t0=$(date +%s)
  timeout -k 10 "$t" bash "$SELF" --stage "$name" > "$WORK/$name.log" 2>&1 < /dev/null
  rc=$?
  SECS[$name]=$(($(date +%s) - t0))
  cat "$WORK/$name.log" >> "$LOGF"
  case $rc in
    0) STATUS[$name]=OK ;;
    124|137) STATUS[$name]=TIMEOUT; NOTE[$name]="killed after ${t}s" ;;
    *) STATUS[$name]="FAIL($rc)" ;;
  esac
  echo "======== [$name] ${STATUS[$name]} after ${SECS[$name]}s" >> "$LOGF"
  log "[$name] ${STATUS[$name]} after ${SECS[$name]}s"
  if [ $rc -ne 0 ]; then
    log "[$name] last lines of its log (all of it in $LOGF):"
    grep -E 'ERROR|error:|Error|FAILED|failed|undefined reference|not found' "$WORK/$name.log" | tail -n 12 | cut -c1-240 | sed 's/^/  ! /'
    tail -n 15 "$WORK/$name.log" | cut -c1-240 | sed 's/^/  | /'
  fi
  return $rc
}
skip() { STATUS[$1]=SKIP; SECS[$1]=0; NOTE[$1]=$2; log "[$1] skipped: $2"; }

# The machine, for the record.
TORCH_INFO=$(timeout 90 "$TORCH_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count())' 2>/dev/null | tail -1)
[ -n "$TORCH_INFO" ] || TORCH_INFO="(no torch at TORCH_PYTHON=$TORCH_PYTHON)"
{
  echo "date: $(date -u)"; echo "host: $(hostname) $(uname -r)"; echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "nproc: $(nproc)  mem: $(free -g 2>/dev/null | awk '/Mem:/{print $2 " GiB"}')"
  echo "--- nvidia-smi"; timeout 30 nvidia-smi 2>&1 | head -40
  for c in "g++ --version" "nvcc --version" "cmake --version" "ninja --version" "ccache --version" "dpkg-deb --version"; do
    echo "--- $c"; timeout 10 $c 2>&1 | head -4
  done
  echo "--- torch"; echo "$TORCH_INFO"
  echo "--- git"; git -C "$ROOT" log --oneline -1 2>&1; git -C "$ROOT" status --short 2>&1 | head -40
  echo "--- environment"; env | sort | grep -Ev '(TOKEN|SECRET|PASSWORD|KEY)=' 
} > "$OUTDIR/system.txt" 2>&1

GPU=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -2 | paste -sd';' -)
[ -n "$GPU" ] || GPU="(nvidia-smi gave nothing: no GPU?)"
log "GPU: $GPU; budget ${CHECK_BUDGET_S:-470}s; prefix $P; build dir $BUILD_DIR; torch python $TORCH_PYTHON"

# Minimum seconds kept for the later stages.
R_CTEST=${R_CTEST:-90}; R_BENCH=${R_BENCH:-60}
if run_stage unpack "${T_UNPACK:-60}" $((60 + 120 + R_CTEST + R_BENCH)); then
  NOTE[unpack]=$(grep -E '^stand-ins:' "$WORK/unpack.log" | sed 's/;.*//' | cut -c1-40)
  if run_stage configure "${T_CONFIGURE:-150}" $((120 + R_CTEST + R_BENCH)); then
    NOTE[configure]="CUDA $(sed -n 's/^OMNI_WITH_CUDA:BOOL=//p' "$BUILD_DIR/CMakeCache.txt")"
    grep -q '^WARNING: found outside' "$WORK/configure.log" && NOTE[configure]+="; WARNING: some deps outside the prefix"
    run_stage build "${T_BUILD:-330}" $((R_CTEST + R_BENCH))
    NOTE[build]=$(grep -E '^building:' "$WORK/build.log" | cut -c1-60)
    # Even after a failed build, what was built is tried.
    if grep -q '^gpu-labelled tests: 0$' "$WORK/build.log" 2>/dev/null; then
      skip ctest "no gpu-labelled tests"
    else
      run_stage ctest "${T_CTEST:-240}" "$R_BENCH"
    fi
    run_stage forward_bench "${T_BENCH:-150}" 5
  else
    skip build "configure failed"; skip ctest "configure failed"; skip forward_bench "configure failed"
  fi
else
  for s in configure build ctest forward_bench; do skip "$s" "unpack failed"; done
fi

# ctest's figures and logs.
CTEST_LINE="-"
if [ -f "$WORK/ctest.log" ]; then
  CTEST_LINE=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$WORK/ctest.log" | tail -1)
  grep -q 'No tests were found' "$WORK/ctest.log" && CTEST_LINE="no gpu-labelled tests were found"
  [ -n "$CTEST_LINE" ] || CTEST_LINE="(no result line: see ctest.log)"
  NOTE[ctest]=$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1 failed of \2/' <<<"$CTEST_LINE" | cut -c1-40)
  { cat "$WORK/ctest.log"; echo; echo "======== $BUILD_DIR/Testing/Temporary/LastTest.log"
    cat "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null; } > "$OUTDIR/ctest.log"
fi
[ -f "$WORK/forward_bench.log" ] && cp "$WORK/forward_bench.log" "$OUTDIR/forward_bench.log"
[ -f "$OUTDIR/forward_bench.json" ] && NOTE[forward_bench]="json: $(wc -c < "$OUTDIR/forward_bench.json") bytes"

# ---- the summary ------------------------------------------------------------------------------------------------------
{
  echo
  echo "================ omni-generate GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - START ))s in all"
  echo "GPU: $GPU"
  echo "$TORCH_INFO"
  echo "commit: $(git -C "$ROOT" log --oneline -1 2>/dev/null | cut -c1-100)"
  printf '| %-13s | %-9s | %5s | %-60s |\n' stage status secs note
  printf '|%s|%s|%s|%s|\n' "---------------" "-----------" "-------" "--------------------------------------------------------------"
  for s in "${STAGES[@]}"; do
    printf '| %-13s | %-9s | %5s | %-60s |\n' "$s" "${STATUS[$s]:-?}" "${SECS[$s]:-0}" "${NOTE[$s]:-}"
  done
  echo "ctest -L gpu: $CTEST_LINE"
  if [ -f "$WORK/ctest.log" ] && grep -q 'The following tests FAILED' "$WORK/ctest.log"; then
    sed -n '/The following tests FAILED/,$p' "$WORK/ctest.log" | grep -E '^\s+[0-9]+ - ' | head -20
  fi
  if [ -f "$WORK/forward_bench.log" ]; then
    echo "forward_bench:"
    if grep -q '^|' "$WORK/forward_bench.log"; then grep '^|' "$WORK/forward_bench.log" | cut -c1-200
    else tail -n 8 "$WORK/forward_bench.log" | cut -c1-200; fi
  fi
  echo "logs: $OUTDIR ($(cd "$OUTDIR" && ls | paste -sd' ' -))"
} | tee "$OUTDIR/summary.txt" | tee -a "$LOGF"
rm -rf "$WORK"

for s in "${STAGES[@]}"; do [ "${STATUS[$s]:-?}" = OK ] || exit 1; done
exit 0
