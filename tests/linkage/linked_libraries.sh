#!/usr/bin/env bash
# The binary and the LibTorch it was built against load ONE libnccl.so.2 and ONE CUDA runtime: the files of
# LibTorch's own wheel set (cmake/torch.cmake), not the CUDA toolkit's copies. And the tool says which
# LibTorch and CUDA it runs on, and resolves --device auto to the CPU where no GPU is visible.
# Usage: linked_libraries.sh OMNI_GENERATE TORCH_LIB_DIR
set -euo pipefail
gen=$1
torch_lib=$(realpath "$2")
site=$(dirname "$(dirname "$torch_lib")")  # .../site-packages
fail() { echo "FAIL: $*" >&2; exit 1; }

deps=$(ldd "$gen")
echo "$deps" | grep -E "nccl|cudart|torch_cuda|c10_cuda" || true
grep -q "libtorch_cuda.so => $torch_lib/libtorch_cuda.so" <<<"$deps" || fail "libtorch_cuda.so not from $torch_lib"
for lib in libnccl.so libcudart.so; do
  n=$(echo "$deps" | grep -c "$lib" || true)
  [ "$n" = 1 ] || fail "$n different $lib* resolved (want exactly one)"
  path=$(echo "$deps" | grep "$lib" | awk '{print $3}')
  case "$(realpath "$path")" in
    "$site"/nvidia/*) ;;
    *) fail "$lib resolves to $path, not to LibTorch's wheel set under $site/nvidia" ;;
  esac
  # The same file LibTorch itself loads.
  torch_path=$(ldd "$torch_lib/libtorch_cuda.so" | grep "$lib" | awk '{print $3}')
  [ "$(realpath "$path")" = "$(realpath "$torch_path")" ] || fail "$lib: binary loads $path, libtorch_cuda.so $torch_path"
done

ver=$("$gen" --version)
echo "$ver"
grep -qE "^LibTorch 2\.[0-9]+\.[0-9]+ with CUDA [0-9]+\.[0-9]+" <<<"$ver" || fail "--version does not name LibTorch 2.x with CUDA"
grep -qE "^NCCL 2\." <<<"$ver" || fail "--version does not name NCCL"
grep -qE "^MPI " <<<"$ver" || fail "--version does not name the MPI library"

plan=$("$gen" --dry-run --prompt x)
echo "$plan" | grep -E "^device:"
grep -qE "^device: cpu \(--device auto; 0 GPU\(s\)" <<<"$plan" || fail "--dry-run without --device does not resolve to cpu"
echo "linked libraries, versions and --device auto: OK"
