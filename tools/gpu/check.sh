#!/usr/bin/env bash
# The GPU machine's check, run from the repository root there: bash tools/gpu/check.sh [OUTDIR]
# Its dry run here, on the CPU:                               bash tools/gpu/check.sh --cpu OUTDIR
#
#   unpack         .gpu-deps/debs/*.deb (tools/gpu/fetch-deps.sh) into a private prefix ($OMNI_DEPS_PREFIX,
#                  default /tmp/omni-deps), with the stand-in libraries the machine lacks, relocated Open MPI
#                  and pkg-config files, and wrappers in PREFIX/bin (mpirun, mpicxx, ffprobe, ffmpeg, pkg-config)
#   configure      cmake -G Ninja into build-gpu/ against that prefix and the torch of $TORCH_PYTHON, with the
#                  nvcc found (PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin, the venv's nvidia/cu*/bin) as
#                  CMAKE_CUDA_COMPILER; cmake and ninja from PATH with $TORCH_PYTHON's bin folder on it
#   build          forward_bench first, then the gpu-labelled tests' executables, omni-generate and omni-compare
#                  (GPU_CHECK_TARGETS=all: everything; or a list of target names), -j$(nproc), ccache if present
#   forward_bench  build-gpu/tools/bench/forward_bench --device cuda --dtype bfloat16 --vae-dtype bfloat16
#                  --warmup 1 --iters 2 --json OUTDIR/forward_bench.json: a14b at batch 1 (bfloat16 weights,
#                  then "a14b fp8-ffn dequant" and "a14b fp8-ffn matmul": float8 feed-forward weights), ti2v5b,
#                  vae21 at batch 1, then vae22 and the batch-2 rows (FORWARD_BENCH_ARGS=--no-fp8: without the
#                  float8 rows); each row is written (log and JSON) as soon as it is measured
#   ctest          ctest -L gpu -j4 --output-on-failure
#
# Each stage has its own timeout, cut so that the whole run ends within $CHECK_BUDGET_S seconds (400); a failed
# stage is reported and the next ones that can still run do. It ends with one summary table, printed last (also
# in OUTDIR/summary.txt), with forward_bench's rows (ms per forward, TFLOP/s, resident weight bytes, peak memory,
# SDPA backend). OUTDIR (default $OUT, else ./gpu-check-out) receives at most 6 files: check.log (every stage in
# full), ctest.log (ctest's output and its LastTest.log), forward_bench.log, forward_bench.json, system.txt (GPU,
# driver, toolchain, environment) and summary.txt. Exit code 0 when every stage passed.
#
# --cpu OUTDIR: every stage that can run without a GPU, cheaply (CI runs it: tests/e2e/gpu_check). unpack is
# skipped (the host's packages); configure and build reuse $BUILD_DIR (default: ./build) as it is, checking
# that it is configured and that the executables exist and are not older than their sources and libraries,
# without building anything; forward_bench runs --device cpu --tiny in float32; ctest runs a few quick tests
# ($CPU_CTEST_REGEX) -j4 from a scratch folder (so the build dir's Testing/ logs are left alone). Stages
# skipped by design show SKIP(cpu); exit 0 when every other stage passed. Same table, same files.
#
# Environment: TORCH_PYTHON (/opt/torch/.venv/bin/python3), OMNI_DEPS_PREFIX, BUILD_DIR (build-gpu), JOBS,
# CHECK_BUDGET_S, T_UNPACK T_CONFIGURE T_BUILD T_BENCH T_CTEST (per-stage caps, seconds), R_BENCH R_CTEST
# (seconds kept for them), GPU_CHECK_TARGETS, CMAKE_ARGS (extra configure flags), CTEST_ARGS (extra ctest
# flags), CTEST_JOBS (4), BENCH_WARMUP (1), BENCH_ITERS (2), FORWARD_BENCH_ARGS (extra flags), CPU_CTEST_REGEX.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/tools/gpu/check.sh"
cd "$ROOT" || exit 2

# The mode: 'check.sh --cpu OUTDIR' is the dry run; the stage subprocesses inherit CHECK_MODE.
if [ "${1:-}" = --cpu ]; then
  CHECK_MODE=cpu; shift
  [ $# -ge 1 ] || { echo "usage: tools/gpu/check.sh --cpu OUTDIR"; exit 2; }
elif [ "${1:-}" != --stage ]; then
  CHECK_MODE=gpu
fi
export CHECK_MODE=${CHECK_MODE:-gpu}

# ---- settings, shared with the stage subprocesses ------------------------------------------------------------
export P=${OMNI_DEPS_PREFIX:-/tmp/omni-deps}
export PL="$P/usr/lib/x86_64-linux-gnu"
export JOBS=${JOBS:-$(nproc 2>/dev/null || echo 16)}
export DEPS_DIR="$ROOT/.gpu-deps"
export CTEST_JOBS=${CTEST_JOBS:-4} BENCH_WARMUP=${BENCH_WARMUP:-1} BENCH_ITERS=${BENCH_ITERS:-2}
if [ "$CHECK_MODE" = cpu ]; then
  # The build dir already built (the one the test passes), its torch, and the host's packages.
  export BUILD_DIR=${BUILD_DIR:-build}
  [ -d "$BUILD_DIR" ] && BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
  if [ -z "${TORCH_PYTHON:-}" ]; then
    TORCH_PYTHON=$(sed -n 's/^OMNI_TORCH_PYTHON:FILEPATH=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
    [ -x "$TORCH_PYTHON" ] || TORCH_PYTHON=$(command -v python3 || echo python3)
  fi
  export TORCH_PYTHON
  export CPU_CTEST_REGEX=${CPU_CTEST_REGEX:-'^(test_config|sched_test|io_test)$'}
  export RUN_LD=""
else
  export BUILD_DIR=${BUILD_DIR:-build-gpu}
  export TORCH_PYTHON=${TORCH_PYTHON:-/opt/torch/.venv/bin/python3}
  # What the prefix's programs and libraries need at run time (the stage 'unpack' puts everything there).
  export RUN_LD="$PL:$PL/openmpi/lib:$P/stubs"
  export OPAL_PREFIX="$P/usr" OPAL_SYSCONFDIR="$P/etc/openmpi" PMIX_PREFIX="$PL/pmix2" PMIX_DATADIR="$PL/pmix2/share" PMIX_LIBDIR="$PL/pmix2/lib"
  export HWLOC_PLUGINS_PATH="$PL/hwloc"   # never the host's hwloc plug-ins
  export PKG_CONFIG_PATH="$PL/pkgconfig:$P/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CPATH="$P/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$PL${LIBRARY_PATH:+:$LIBRARY_PATH}"
  # The toolchain: the prefix's wrappers (mpirun, mpicxx, ffprobe, pkg-config, ...) first, then the CUDA
  # toolkit's nvcc and the torch venv's bin (cmake, ninja, ctest). nvcc is looked for once, by the driver
  # (CHECK_NVCC, inherited by the stages; set it to choose one).
  venv_bin=$(dirname "$TORCH_PYTHON")
  if [ -z "${CHECK_NVCC+x}" ]; then
    CHECK_NVCC=""
    for c in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc \
             $(ls -d /usr/local/cuda-*/bin/nvcc 2>/dev/null | sort -rV) /opt/cuda/bin/nvcc \
             $(ls -d "$venv_bin"/../lib/python3*/site-packages/nvidia/cu*/bin/nvcc 2>/dev/null | sort -rV); do
      if [ -n "$c" ] && [ -x "$c" ]; then CHECK_NVCC=$(readlink -f "$c"); break; fi
    done
  fi
  export CHECK_NVCC
  case ":$PATH:" in
    *":$P/bin:"*) ;;   # a stage: the driver set it
    *) PATH="$P/bin${CHECK_NVCC:+:$(dirname "$CHECK_NVCC")}$([ -d "$venv_bin" ] && echo ":$venv_bin"):$PATH" ;;
  esac
  export PATH
  [ -n "$CHECK_NVCC" ] && export CUDACXX="$CHECK_NVCC"
fi
export PY=$TORCH_PYTHON
[ -x "$PY" ] || PY=python3
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
run_env() {  # the prefix's libraries (the cpu mode uses the host's)
  [ -n "$RUN_LD" ] || return 0
  export LD_LIBRARY_PATH="$RUN_LD${HOST_LD_LIBRARY_PATH:+:$HOST_LD_LIBRARY_PATH}"
}
# The folder ctest runs in: the build dir; in cpu mode a scratch folder whose CTestTestfile.cmake includes the
# build dir, so that ctest's Testing/ logs there (those of a ctest that may be running this script) stay whole.
ctest_dir() {
  if [ "$CHECK_MODE" = cpu ]; then
    mkdir -p "$WORK/ctest" && echo "subdirs(\"$BUILD_DIR\")" > "$WORK/ctest/CTestTestfile.cmake" && echo "$WORK/ctest"
  else
    echo "$BUILD_DIR"
  fi
}
# The tests ctest runs: the gpu-labelled ones; in cpu mode a few quick ones (never -L gpu: those need a GPU).
if [ "$CHECK_MODE" = cpu ]; then SEL=(-R "$CPU_CTEST_REGEX"); else SEL=(-L gpu); fi

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
  if [ "$CHECK_MODE" = cpu ]; then
    # The build dir as it is: configuring it again would rebuild what the tests running beside use.
    [ -f "$BUILD_DIR/CMakeCache.txt" ] || { echo "ERROR: $BUILD_DIR has no CMakeCache.txt: configure and build it first"; return 1; }
    [ -f "$BUILD_DIR/build.ninja" ] || { echo "ERROR: $BUILD_DIR has no build.ninja (cpu mode needs a Ninja build dir)"; return 1; }
    echo "cpu mode: $BUILD_DIR as configured, not re-run"
    echo "toolchain: cmake $(command -v cmake || echo none), ninja $(command -v ninja || echo none)"
    grep -E '^(Torch_DIR|OMNI_WITH_CUDA|OMNI_TORCH_PYTHON|CMAKE_CUDA_COMPILER|CMAKE_CXX_COMPILER|CMAKE_BUILD_TYPE|CMAKE_GENERATOR)[:=]' \
      "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
    return 0
  fi
  [ -x "$TORCH_PYTHON" ] || { echo "ERROR: no python at TORCH_PYTHON=$TORCH_PYTHON"; return 1; }
  command -v cmake >/dev/null || { echo "ERROR: no cmake on PATH"; return 1; }
  command -v g++ >/dev/null || command -v c++ >/dev/null || { echo "ERROR: no C++ compiler (g++) on PATH"; return 1; }
  local gen=(-G Ninja)
  command -v ninja >/dev/null || { echo "WARNING: no ninja on PATH: Unix Makefiles"; gen=(-G "Unix Makefiles"); }
  echo "toolchain: cmake $(command -v cmake) ($(cmake --version | head -1)), ninja $(command -v ninja || echo none)" \
    "($(ninja --version 2>/dev/null)), nvcc ${CHECK_NVCC:-none}"
  local cuda=()
  if [ -n "${CHECK_NVCC:-}" ]; then
    cuda=(-DCMAKE_CUDA_COMPILER="$CHECK_NVCC" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$CHECK_NVCC")")")
  else
    echo "WARNING: no nvcc found (PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin, the venv's nvidia/cu*/bin)"
  fi
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
    "${cuda[@]}" ${CMAKE_ARGS:-} || return 1
  echo "--- where CMake found each dependency ($BUILD_DIR/CMakeCache.txt)"
  grep -E '^(Torch_DIR|OMNI_WITH_CUDA|NCCL_LIBRARY|CMAKE_CUDA_COMPILER|MPI_CXX_COMPILER|MPIEXEC_EXECUTABLE|MPI_mpi_LIBRARY|MPI_mpi_cxx_LIBRARY|MPI_CXX_HEADER_DIR|CLI11_DIR|yaml-cpp_DIR|nlohmann_json_DIR|GTest_DIR|GTEST_[A-Z_]*LIBRARY|STB_INCLUDE_DIR|SENTENCEPIECE_TRAIN_LIB|PKG_CONFIG_EXECUTABLE|CMAKE_CXX_COMPILER|CMAKE_CXX_COMPILER_LAUNCHER|CMAKE_MAKE_PROGRAM|CMAKE_COMMAND)[:=]' \
    "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
  grep -E '^(FFMPEG_INCLUDE_DIRS|SENTENCEPIECE_INCLUDE_DIRS):INTERNAL=|^pkgcfg_lib_[^:]*:FILEPATH=' "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
  local elsewhere
  elsewhere=$(grep -E '^(CLI11_DIR|yaml-cpp_DIR|nlohmann_json_DIR|GTest_DIR|MPI_mpi_LIBRARY|STB_INCLUDE_DIR|SENTENCEPIECE_TRAIN_LIB|pkgcfg_lib_FFMPEG_[a-z]*):' \
    "$BUILD_DIR/CMakeCache.txt" | grep -v "=$P/" || true)
  [ -z "$elsewhere" ] || echo "WARNING: found outside $P: $elsewhere"
}

# The executables that the selected tests run (any argument of theirs that is a file the build makes), one per
# line relative to the build dir, after a line '# N' (how many tests).
test_executables() {
  (cd "$(ctest_dir)" && ctest "${SEL[@]}" --show-only=json-v1 2>/dev/null) |
    "$PY" -c '
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
' "$BUILD_DIR"
}

stage_build() {
  local targets=() t wanted
  if [ "$CHECK_MODE" = cpu ]; then
    # Nothing is built: the executables must exist, and none may be older than a source file or library that
    # ninja knows it from (headers are not looked at). A stale one is reported, not rebuilt.
    wanted=$(test_executables)
    echo "selected tests ($CPU_CTEST_REGEX): $(sed -n 's/^# //p' <<<"$wanted")"
    local missing=() stale=() f newer
    for t in tools/bench/forward_bench $(grep -v '^#' <<<"$wanted"); do
      [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
    done
    for t in "${targets[@]}"; do
      if [ ! -x "$BUILD_DIR/$t" ]; then missing+=("$t"); continue; fi
      newer=0
      while IFS= read -r f; do
        case $f in /*) ;; *) f="$BUILD_DIR/$f" ;; esac
        [ "$f" -nt "$BUILD_DIR/$t" ] && newer=$((newer + 1))
      done < <(ninja -C "$BUILD_DIR" -t inputs "$t" 2>/dev/null)
      if [ "$newer" -gt 0 ]; then stale+=("$t"); echo "stale: $t ($newer inputs are newer; not rebuilt)"; fi
    done
    echo "checked: ${targets[*]}"
    echo "cpu-build: ${#targets[@]} executables, ${#missing[@]} missing, ${#stale[@]} stale"
    [ ${#missing[@]} -eq 0 ] || { echo "ERROR: not built in $BUILD_DIR: ${missing[*]} (cpu mode builds nothing)"; return 1; }
    return 0
  fi
  if [ "${GPU_CHECK_TARGETS:-auto}" = all ]; then
    targets=()
  elif [ "${GPU_CHECK_TARGETS:-auto}" != auto ]; then
    read -r -a targets <<<"$GPU_CHECK_TARGETS"
  else
    # The executables that the gpu-labelled tests run, with forward_bench, omni-generate and omni-compare.
    local known
    known=$(cd "$BUILD_DIR" && { ninja -t targets all 2>/dev/null || true; } | sed 's/: .*//')
    wanted=$(test_executables)
    echo "gpu-labelled tests: $(sed -n 's/^# //p' <<<"$wanted")"
    for t in $(grep -v '^#' <<<"$wanted") forward_bench omni-generate omni-compare; do
      if grep -qxF -- "$t" <<<"$known" && [[ " ${targets[*]} " != *" $t "* ]]; then targets+=("$t"); fi
    done
    [ ${#targets[@]} -gt 0 ] || { echo "no targets found: building everything"; targets=(); }
  fi
  echo "building: ${targets[*]:-everything} (-j$JOBS)"
  if [ -f "$BUILD_DIR/build.ninja" ]; then
    # forward_bench first: the benchmark can run even when the rest of the build is cut short.
    local rc=0
    if [[ " ${targets[*]} " == *" forward_bench "* ]]; then
      echo "--- forward_bench first"
      ninja -C "$BUILD_DIR" -k 0 -j "$JOBS" forward_bench || rc=1
      echo "--- the rest"
    fi
    ninja -C "$BUILD_DIR" -k 0 -j "$JOBS" "${targets[@]}" || rc=1
    return $rc
  else
    cmake --build "$BUILD_DIR" -j "$JOBS" ${targets[@]:+--target "${targets[@]}"} -- -k
  fi
}

stage_forward_bench() {
  run_env
  local bin="$BUILD_DIR/tools/bench/forward_bench"
  [ -x "$bin" ] || { echo "ERROR: $bin was not built"; return 1; }
  local args=(--warmup "$BENCH_WARMUP" --iters "$BENCH_ITERS" --json "$OUTDIR/forward_bench.json")
  if [ "$CHECK_MODE" = cpu ]; then
    # The same code paths at the generator's "small" sizes, in float32 (bfloat16 on a CPU is slow and beside
    # the point here).
    args=(--device cpu --tiny --dtype float32 --vae-dtype float32 "${args[@]}")
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
  else
    # bfloat16 throughout, the VAE too: the anchors (diffusers on one H200) were measured so.
    args=(--device cuda --dtype bfloat16 --vae-dtype bfloat16 "${args[@]}")
  fi
  echo "running: $bin ${args[*]} ${FORWARD_BENCH_ARGS:-}"
  # shellcheck disable=SC2086
  "$bin" "${args[@]}" ${FORWARD_BENCH_ARGS:-}
}

stage_ctest() {
  run_env
  cd "$(ctest_dir)" || return 1
  echo "ctest ${SEL[*]} -j$CTEST_JOBS in $PWD"
  # shellcheck disable=SC2086
  ctest "${SEL[@]}" -j "$CTEST_JOBS" --output-on-failure --no-tests=error \
    --timeout "${CTEST_TEST_TIMEOUT:-300}" ${CTEST_ARGS:-}
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
export WORK
rm -f "$OUTDIR/forward_bench.json" "$OUTDIR/forward_bench.json.tmp"   # never a previous run's rows
: > "$LOGF"
START=$(date +%s)
BUDGET=${CHECK_BUDGET_S:-400}  # of the session's 15 device minutes: room for the machine's start and a second run
DEADLINE=$((START + BUDGET))

declare -A STATUS=() SECS=() NOTE=()
STAGES=(unpack configure build forward_bench ctest)

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
# A stage the cpu mode leaves out by design: not a failure.
skip_cpu() { STATUS[$1]="SKIP(cpu)"; SECS[$1]=0; NOTE[$1]=$2; log "[$1] skipped: $2"; }

# The machine, for the record.
TORCH_INFO=$(timeout 90 "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count())' 2>/dev/null | tail -1)
[ -n "$TORCH_INFO" ] || TORCH_INFO="(no torch at TORCH_PYTHON=$TORCH_PYTHON)"
tool_line() {  # PROGRAM: its path and version, or none
  local p v
  p=$(command -v "$1" 2>/dev/null) || { echo none; return; }
  v=$(timeout 10 "$p" --version 2>&1 | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1)
  echo "$p (${v:-?})"
}
TOOLCHAIN="nvcc $(tool_line "${CHECK_NVCC:-nvcc}"); cmake $(tool_line cmake); ninja $(tool_line ninja)"
{
  echo "date: $(date -u)"; echo "host: $(hostname) $(uname -r)"; echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "mode: $CHECK_MODE"
  echo "nproc: $(nproc)  mem: $(free -g 2>/dev/null | awk '/Mem:/{print $2 " GiB"}')"
  echo "--- nvidia-smi"; timeout 30 nvidia-smi 2>&1 | head -40
  echo "--- toolchain: $TOOLCHAIN"
  for c in "g++ --version" "${CHECK_NVCC:-nvcc} --version" "cmake --version" "ninja --version" "ccache --version" "dpkg-deb --version"; do
    echo "--- $c"; timeout 10 $c 2>&1 | head -4
  done
  echo "--- torch"; echo "$TORCH_INFO"
  echo "--- git"; git -C "$ROOT" log --oneline -1 2>&1; git -C "$ROOT" status --short 2>&1 | head -40
  echo "--- environment"; env | sort | grep -Ev '(TOKEN|SECRET|PASSWORD|KEY)='
} > "$OUTDIR/system.txt" 2>&1

if [ "$CHECK_MODE" = cpu ]; then
  GPU="(cpu mode: no GPU used)"
else
  GPU=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -2 | paste -sd';' -)
  [ -n "$GPU" ] || GPU="(nvidia-smi gave nothing: no GPU?)"
fi
log "mode $CHECK_MODE; GPU: $GPU; budget ${BUDGET}s; prefix $P; build dir $BUILD_DIR; torch python $TORCH_PYTHON"
log "toolchain: $TOOLCHAIN"

# Minimum seconds kept for the later stages: forward_bench runs before ctest.
R_CTEST=${R_CTEST:-90}; R_BENCH=${R_BENCH:-120}
if [ "$CHECK_MODE" = cpu ]; then
  skip_cpu unpack "cpu mode: the host's packages, .gpu-deps not unpacked"
  CONFIGURED=0
  run_stage configure "${T_CONFIGURE:-150}" $((R_BENCH + R_CTEST)) && CONFIGURED=1
else
  CONFIGURED=0
  # Its reserve: configure's and build's usual times (13 s and 70 s measured on the H200) with a margin.
  if run_stage unpack "${T_UNPACK:-60}" $((30 + 60 + R_BENCH + R_CTEST)); then
    NOTE[unpack]=$(grep -E '^stand-ins:' "$WORK/unpack.log" | sed 's/;.*//' | cut -c1-40)
    run_stage configure "${T_CONFIGURE:-150}" $((120 + R_BENCH + R_CTEST)) && CONFIGURED=1
  else
    for s in configure build forward_bench ctest; do skip "$s" "unpack failed"; done
  fi
fi
if [ "$CONFIGURED" = 1 ]; then
  if [ "$CHECK_MODE" = cpu ]; then
    NOTE[configure]="cpu mode: $BUILD_DIR reused, not re-run; CUDA $(sed -n 's/^OMNI_WITH_CUDA:BOOL=//p' "$BUILD_DIR/CMakeCache.txt")"
  else
    NOTE[configure]="CUDA $(sed -n 's/^OMNI_WITH_CUDA:BOOL=//p' "$BUILD_DIR/CMakeCache.txt")"
    grep -q '^WARNING: found outside' "$WORK/configure.log" && NOTE[configure]+="; WARNING: some deps outside the prefix"
  fi
  run_stage build "${T_BUILD:-330}" $((R_BENCH + R_CTEST))
  if [ "$CHECK_MODE" = cpu ]; then
    NOTE[build]="cpu mode, nothing built: $(sed -n 's/^cpu-build: //p' "$WORK/build.log")"
  else
    NOTE[build]=$(grep -E '^building:' "$WORK/build.log" | cut -c1-60)
  fi
  # Even after a failed build, what was built is tried. BENCH=0: a second run for tests alone.
  if [ "${BENCH:-1}" = 0 ]; then
    STATUS[forward_bench]="SKIP(asked)"; SECS[forward_bench]=0; NOTE[forward_bench]="BENCH=0"
    log "[forward_bench] skipped: BENCH=0"
  else
    run_stage forward_bench "${T_BENCH:-180}" "$R_CTEST"
  fi
  if grep -qE '^(gpu-labelled|selected) tests[^:]*: 0$' "$WORK/build.log" 2>/dev/null; then
    skip ctest "no tests selected"
  else
    run_stage ctest "${T_CTEST:-240}" 5
  fi
else
  for s in build forward_bench ctest; do [ -n "${STATUS[$s]:-}" ] || skip "$s" "configure ${STATUS[configure]:-?}"; done
fi

# ctest's figures and logs.
CTEST_LINE="-"
CTEST_DESC="ctest ${SEL[*]} -j$CTEST_JOBS"
if [ -f "$WORK/ctest.log" ]; then
  CTEST_LINE=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$WORK/ctest.log" | tail -1)
  grep -q 'No tests were found' "$WORK/ctest.log" && CTEST_LINE="no tests were found"
  [ -n "$CTEST_LINE" ] || CTEST_LINE="(no result line: see ctest.log)"
  NOTE[ctest]=$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1 failed of \2/' <<<"$CTEST_LINE" | cut -c1-40)
  [ "$CHECK_MODE" = cpu ] && NOTE[ctest]="cpu mode, quick tests only: ${NOTE[ctest]}"
  { cat "$WORK/ctest.log"; echo; echo "======== $(ctest_dir)/Testing/Temporary/LastTest.log"
    cat "$(ctest_dir)/Testing/Temporary/LastTest.log" 2>/dev/null; } > "$OUTDIR/ctest.log"
fi
# forward_bench's rows: the table rows it printed (each as soon as measured), and its JSON file.
BENCH_ROWS=""
if [ -f "$WORK/forward_bench.log" ]; then
  cp "$WORK/forward_bench.log" "$OUTDIR/forward_bench.log"
  BENCH_ROWS=$(grep '^|' "$WORK/forward_bench.log" | cut -c1-200)
fi
if [ -f "$OUTDIR/forward_bench.json" ]; then
  JSON_ROWS=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$OUTDIR/forward_bench.json" 2>/dev/null || echo invalid)
  n_table=$(grep -E '^\| [a-z0-9]' <<<"$BENCH_ROWS" | grep -vc '^| workload ')
  NOTE[forward_bench]="${NOTE[forward_bench]:+${NOTE[forward_bench]}; }$n_table rows; json: $JSON_ROWS rows"
  [ "$CHECK_MODE" = cpu ] && NOTE[forward_bench]+="; cpu --tiny float32"
fi

# ---- the follow-up: what a second run should do (the rows not measured, the gpu tests not passed) ----------
FOLLOW_UP=""
follow_up() {
  local only="" tests="" all passed
  if [ "${STATUS[forward_bench]:-?}" != OK ] && [ "${STATUS[forward_bench]:-?}" != "SKIP(asked)" ]; then
    # The workloads with an expected row not measured (a failed row is not measured).
    only=$("$PY" - "$OUTDIR/forward_bench.json" "${FORWARD_BENCH_ARGS:-}" <<'PY' 2>/dev/null
import json, sys
try:
    rows = json.load(open(sys.argv[1]))
except Exception:
    rows = []
done = {(r.get("label"), r.get("batch")) for r in rows if "error" not in r}
args = sys.argv[2].split()
fp8 = "--no-fp8" not in args
want = {"a14b": [("a14b", 1)] + ([("a14b fp8-ffn dequant", 1), ("a14b fp8-ffn matmul", 1)] if fp8 else [])
                + [("a14b", 2)],
        "ti2v5b": [("ti2v5b", 1), ("ti2v5b", 2)], "vae21": [("vae21", 1)], "vae22": [("vae22", 1)]}
if "--only" in args and args.index("--only") + 1 < len(args):
    asked = args[args.index("--only") + 1].split(",")
    want = {w: r for w, r in want.items() if w in asked}
print(",".join(w for w, r in want.items() if any(x not in done for x in r)))
PY
)
  fi
  if [ "${STATUS[ctest]:-?}" != OK ] && [ "$CHECK_MODE" != cpu ]; then
    all=$(cd "$(ctest_dir)" 2>/dev/null && ctest -N "${SEL[@]}" 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
    passed=$(sed -n 's/.*Test *#[0-9]*: \([^ ]*\) .*Passed.*/\1/p' "$WORK/ctest.log" 2>/dev/null)
    tests=$(comm -23 <(sort <<<"$all") <(sort <<<"$passed") | grep -v '^$' | paste -sd'|' -)
  fi
  if [ -z "$only" ] && [ -z "$tests" ]; then
    FOLLOW_UP="follow-up: none needed"
    return
  fi
  FOLLOW_UP="follow-up (a second run: the rows not measured, the gpu tests not passed):"$'\n'"  "
  [ -n "$only" ] && FOLLOW_UP+="FORWARD_BENCH_ARGS='--only $only' " || FOLLOW_UP+="BENCH=0 "
  [ -n "$tests" ] && FOLLOW_UP+="CTEST_ARGS='-R ^($tests)\$' "
  FOLLOW_UP+="bash tools/gpu/check.sh \$OUT"
}
follow_up

# ---- the summary, printed last ----------------------------------------------------------------------------------------
{
  echo
  echo "================ omni-generate GPU check$([ "$CHECK_MODE" = cpu ] && echo " (--cpu dry run)"): $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - START ))s in all (budget ${BUDGET}s)"
  echo "GPU: $GPU"
  echo "$TORCH_INFO"
  echo "toolchain: $TOOLCHAIN"
  echo "commit: $(git -C "$ROOT" log --oneline -1 2>/dev/null | cut -c1-100)"
  printf '| %-13s | %-9s | %5s | %-60s |\n' stage status secs note
  printf '|%s|%s|%s|%s|\n' "---------------" "-----------" "-------" "--------------------------------------------------------------"
  for s in "${STAGES[@]}"; do
    printf '| %-13s | %-9s | %5s | %-60s |\n' "$s" "${STATUS[$s]:-?}" "${SECS[$s]:-0}" "$(cut -c1-60 <<<"${NOTE[$s]:-}")"
  done
  if [ -f "$WORK/forward_bench.log" ]; then
    echo "forward_bench (${STATUS[forward_bench]:-?}; $BENCH_WARMUP warm-up + $BENCH_ITERS timed runs; rows as measured):"
    if [ -n "$BENCH_ROWS" ]; then echo "$BENCH_ROWS"
    else echo "  (no row measured)"; tail -n 8 "$WORK/forward_bench.log" | cut -c1-200 | sed 's/^/  /'; fi
  fi
  echo "$CTEST_DESC: $CTEST_LINE"
  if [ -f "$WORK/ctest.log" ] && grep -q 'The following tests FAILED' "$WORK/ctest.log"; then
    sed -n '/The following tests FAILED/,$p' "$WORK/ctest.log" | grep -E '^\s+[0-9]+ - ' | head -20
  fi
  echo "$FOLLOW_UP"
  echo "logs: $OUTDIR ($( (cd "$OUTDIR" && ls; echo summary.txt) | sort -u | paste -sd' ' -))"
} > "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUTDIR/summary.txt"
cat "$WORK/summary.txt" >> "$LOGF"
rm -rf "$WORK"
cat "$OUTDIR/summary.txt"

for s in "${STAGES[@]}"; do
  case ${STATUS[$s]:-?} in OK | "SKIP(asked)") ;; "SKIP(cpu)") [ "$CHECK_MODE" = cpu ] || exit 1 ;; *) exit 1 ;; esac
done
exit 0
