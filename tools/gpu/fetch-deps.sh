#!/usr/bin/env bash
# Fetches, on a Debian 12 machine with apt, everything that the GPU machine lacks to build and test omni-generate
# (all but LibTorch, which the GPU machine's /opt/torch/.venv has): the Debian .deb files into .gpu-deps/debs/,
# and small stand-in libraries into .gpu-deps/stubs/. tools/gpu/check.sh unpacks them there into a private
# prefix. Quick when everything is already fetched. See tools/gpu/README.md.
#
# Stand-ins: Debian's FFmpeg links some 100 codec, device, filter and network libraries (x265, aom, librsvg with
# cairo and pango, flite, SDL, PulseAudio, ...): ~100 MiB of .debs with their own dependencies, far over the
# 64 MiB that the GPU machine can be sent. omni-generate uses FFmpeg's own H.264 decoder, MP4 muxer and
# demuxer, swscale and libx264 only. Every other library that the shipped FFmpeg files NEED is replaced by a
# stand-in: a library of the same SONAME and symbol versions that exports every symbol of the real one (read
# from Debian's package), functions that return 0, data that is zeros, and nothing else. The dynamic loader
# and the linker are satisfied; nothing calls into them unless a codec, device or filter that needs them is
# used (FFmpeg's start-up only queries the capabilities of the AV1/VP9/x265 encoders, which 0 answers; the
# demuxer probes that call libraries, libgme's and libopenmpt's, get the real ones). check.sh drops each
# stand-in whose SONAME the GPU machine has for real.
set -euo pipefail
cd "$(dirname "$0")/../.."

DEST=.gpu-deps
DEBS=$DEST/debs
STUBS=$DEST/stubs
CACHE=${OMNI_GPU_DEPS_CACHE:-.cache/gpu-deps}   # stand-in sources (git-ignored, not sent)

# ---- what is sent -------------------------------------------------------------------------------------------
# Open MPI: runtime (mpirun, orted), libraries, headers and compiler wrappers, and the libraries they NEED.
# Its transport plug-ins for UCX, libfabric, PSM and verbs are not sent (check.sh sets them aside): one node
# uses shared memory.
MPI_PACKAGES=(
  libopenmpi3 openmpi-bin openmpi-common libopenmpi-dev
  libpmix2 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2
)
# FFmpeg: the four libraries the project links (with libswresample, which libavcodec NEEDs), their headers and
# .pc files, libx264 (the H.264 encoder used), the ffmpeg and ffprobe programs that the tests call (with
# libavfilter, libavdevice and libpostproc, which they NEED), and libgme and libopenmpt (with theirs): opening
# any file without a named format runs every demuxer's probe, and those two call into their libraries there.
FFMPEG_PACKAGES=(
  libavcodec59 libavformat59 libavutil57 libswscale6 libswresample4
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libx264-164
  ffmpeg libavfilter8 libavdevice59 libpostproc56
  libgme0 libopenmpt0 libmpg123-0 libvorbisfile3 libvorbis0a libogg0
)
# The rest of tools/install-deps.sh, and pkg-config (the GPU machine may have none).
OTHER_PACKAGES=(
  libyaml-cpp0.7 libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libstb-dev
  libgtest-dev libgmock-dev
  libsentencepiece0 libsentencepiece-dev
  libjpeg62-turbo libjpeg62-turbo-dev libwebp7 libwebpdemux2 libwebpmux3 libwebp-dev libicu72 libicu-dev
  pkgconf pkgconf-bin libpkgconf3
)
PACKAGES=("${MPI_PACKAGES[@]}" "${FFMPEG_PACKAGES[@]}" "${OTHER_PACKAGES[@]}")
# SONAMEs every Linux with a C++ compiler has; never sent nor stood in for (check.sh checks they are there).
HOST_SONAMES=" libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1
  ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1 libatomic.so.1 libz.so.1 "
# Stand-ins also made for these (SONAME:package), which the MPI libraries NEED: hwloc works without udev.
EXTRA_STANDINS=(libudev.so.1:libudev1)
STUB_GENERATOR_VERSION=5

die() { echo "fetch-deps: $*" >&2; exit 1; }
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || die "needs a Debian 12 amd64 machine with apt (the GPU machine is x86-64)"
for tool in apt-get apt-cache dpkg-deb readelf gcc; do
  command -v "$tool" >/dev/null || die "needs $tool (apt-get install binutils gcc)"
done
APT_OPTS=()
[ "$(id -u)" -eq 0 ] && APT_OPTS=(-o APT::Sandbox::User=root)

# The candidate .deb file names (as apt-get download names them) of packages, into DEB_NAME[pkg]; one
# apt-cache call for all of them.
declare -A DEB_NAME=()
resolve() {
  local line
  while read -r line; do
    DEB_NAME[${line%% *}]=${line#* }
  done < <(apt-cache show --no-all-versions "$@" 2>/dev/null |
           awk '/^Package:/ { p = $2 } /^Version:/ { v = $2; sub(/:/, "%3a", v) } /^Architecture:/ { a = $2 }
                /^$/ { if (p != "") print p " " p "_" v "_" a ".deb"; p = "" }
                END { if (p != "") print p " " p "_" v "_" a ".deb" }')
}
deb_name() { echo "${DEB_NAME[$1]:-}"; }
resolve "${PACKAGES[@]}"
if [ -z "$(deb_name libopenmpi3)" ]; then
  echo "fetch-deps: no package lists yet: apt-get update"
  apt-get update -qq
  resolve "${PACKAGES[@]}"
fi

# download DIR PKG...: the candidate versions into DIR, keeping what is already there.
download() {
  local dir=$1; shift
  mkdir -p "$dir"
  local want=() f p
  for p in "$@"; do
    f=$(deb_name "$p")
    [ -n "$f" ] || die "apt knows no package $p (apt-get update?)"
    [ -s "$dir/$f" ] || want+=("$p")
  done
  if [ ${#want[@]} -gt 0 ]; then
    echo "fetch-deps: downloading ${#want[@]} packages into $dir"
    (cd "$dir" && apt-get download -q=2 "${APT_OPTS[@]}" "${want[@]}") || die "apt-get download failed"
  fi
}

# ---- the .debs --------------------------------------------------------------------------------------------
download "$DEBS" "${PACKAGES[@]}"
declare -A keep=()
for p in "${PACKAGES[@]}"; do keep[$(deb_name "$p")]=1; done
for f in "$DEBS"/*.deb; do
  b=$(basename "$f")
  if [ -z "${keep[$b]:-}" ]; then echo "fetch-deps: removing stale $b"; rm -f "$f"; fi
done
grep -qx '.gpu-deps/' .gitignore 2>/dev/null || echo "fetch-deps: note: .gpu-deps/ is not in .gitignore"
# ICU's static archives are never linked (the build links libicuuc.so): they leave libicu-dev, which keeps what
# is sent under the 64 MiB limit (they are 44 MiB of its 48). GoogleTest's are what the tests link: kept.
for f in "$DEBS"/libicu-dev_*.deb; do
  [ "$(dpkg-deb -c "$f" | grep -c '\.a$')" -gt 0 ] || continue
  rm -rf "$CACHE/slim"; mkdir -p "$CACHE/slim"
  dpkg-deb -R "$f" "$CACHE/slim/pkg" || die "cannot unpack $f"
  find "$CACHE/slim/pkg" -name '*.a' -delete
  sed -i '/\.a$/d' "$CACHE/slim/pkg/DEBIAN/md5sums" 2>/dev/null || true
  dpkg-deb -Zxz -b "$CACHE/slim/pkg" "$CACHE/slim/slim.deb" >/dev/null || die "cannot repack $f"
  echo "fetch-deps: $(basename "$f"): static archives left out ($(du -k "$f" | cut -f1) -> $(du -k "$CACHE/slim/slim.deb" | cut -f1) KiB)"
  mv "$CACHE/slim/slim.deb" "$f"
done
rm -rf "$CACHE/slim"

# ---- the stand-ins ----------------------------------------------------------------------------------------
is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
elf_needed() { readelf -dW "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
elf_soname() { readelf -dW "$1" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p'; }

stamp=$( (echo "generator $STUB_GENERATOR_VERSION"; ls "$DEBS") | sha256sum | cut -c1-16)
if [ -f "$STUBS/.stamp" ] && [ "$(cat "$STUBS/.stamp")" = "$stamp" ]; then
  echo "fetch-deps: stand-ins up to date ($(ls "$STUBS"/*.so* | wc -l) in $STUBS)"
else
  rm -rf "$CACHE/real" "$STUBS.new"
  mkdir -p "$CACHE/real" "$STUBS.new"
  # What the shipped (non-MPI) files NEED and what they provide.
  for p in "${FFMPEG_PACKAGES[@]}" "${OTHER_PACKAGES[@]}"; do
    dpkg-deb -x "$DEBS/$(deb_name "$p")" "$CACHE/real"
  done
  declare -A provided=() missing=()
  while IFS= read -r -d '' f; do
    provided[$(basename "$f")]=1
    is_elf "$f" || continue
    s=$(elf_soname "$f"); [ -n "$s" ] && provided[$s]=1
  done < <(find "$CACHE/real" \( -type f -o -type l \) -print0)
  for p in "${MPI_PACKAGES[@]}"; do  # MPI's own libraries count as provided
    while read -r f; do provided[$(basename "$f")]=1; done < <(dpkg-deb -c "$DEBS/$(deb_name "$p")" | awk '{print $6}')
  done
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    for n in $(elf_needed "$f"); do
      [ -n "${provided[$n]:-}" ] || [[ "$HOST_SONAMES" == *" $n "* ]] || missing[$n]=1
    done
  done < <(find "$CACHE/real" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0)
  echo "fetch-deps: ${#missing[@]} libraries NEEDED by the shipped FFmpeg files are stood in for"
  for e in "${EXTRA_STANDINS[@]}"; do missing[${e%%:*}]=1; done

  # Their real packages (the shipped packages' direct Depends), for their symbol tables; not sent.
  deps=()
  for p in "${FFMPEG_PACKAGES[@]}" "${OTHER_PACKAGES[@]}"; do
    while read -r d; do
      [[ " ${PACKAGES[*]} " == *" $d "* ]] || deps+=("$d")
    done < <(apt-cache depends --no-recommends --no-suggests --no-enhances --no-conflicts --no-breaks \
               --no-replaces --no-pre-depends "$p" 2>/dev/null |
             awk '/^ *\|?Depends: [^<]/ { print $2 } /^ *\|?Depends: </ { v = 1; next } v && /^    [^ ]/ { print $1; v = 0; next } { v = 0 }')
  done
  for e in "${EXTRA_STANDINS[@]}"; do deps+=("${e#*:}"); done
  mapfile -t deps < <(printf '%s\n' "${deps[@]}" | sort -u | grep -v '^$' || true)
  resolve "${deps[@]}"
  download "$CACHE/src-debs" "${deps[@]}"
  declare -A source=()
  rm -rf "$CACHE/src"; mkdir -p "$CACHE/src"
  for p in "${deps[@]}"; do
    mkdir -p "$CACHE/src/$p"
    dpkg-deb --fsys-tarfile "$CACHE/src-debs/$(deb_name "$p")" | tar -x -C "$CACHE/src/$p" --wildcards '*.so.*' 2>/dev/null || true
    while IFS= read -r -d '' f; do
      is_elf "$f" || continue
      s=$(elf_soname "$f"); [ -n "$s" ] && [ -n "${missing[$s]:-}" ] && source[$s]="$p $f"
    done < <(find "$CACHE/src/$p" -type f -print0)
  done

  {
    echo "# Stand-in libraries (tools/gpu/fetch-deps.sh): SONAME, the package it stands in for, exported symbols"
  } > "$STUBS.new/MANIFEST"
  for s in $(printf '%s\n' "${!missing[@]}" | sort); do
    [ -n "${source[$s]:-}" ] || die "no package among the Depends of the shipped ones provides $s"
    read -r pkg lib <<<"${source[$s]}"
    asm="$CACHE/stub-$s.S"; map="$CACHE/stub-$s.map"
    # Every exported symbol of the real library: FUNC -> 'return 0', OBJECT/TLS -> zeros of its size;
    # versioned ones under the same version names (.symver), so that the loader's version checks pass.
    readelf --dyn-syms -W "$lib" | awk -v map="$map" '
      $1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" && ($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") {
        type = $4; size = $3 + 0; name = $8; ver = ""; dflt = 1
        if (index(name, "@@")) { ver = substr(name, index(name, "@@") + 2); name = substr(name, 1, index(name, "@@") - 1) }
        else if (index(name, "@")) { ver = substr(name, index(name, "@") + 1); name = substr(name, 1, index(name, "@") - 1); dflt = 0 }
        if (name == "" || name ~ /^(_init|_fini|_edata|_end|__bss_start)$/ || seen[name "@" ver]++) next
        # Unversioned symbols are defined under their own name, versioned ones under a local label.
        if (ver == "") { if (plain[name]++) next; lbl = name } else lbl = "__omni_stub_" (++n)
        data = (type == "OBJECT" || type == "TLS" || type == "COMMON")
        if (data) {
          if (size < 1) size = 1
          if (type == "TLS") print "\t.section .tbss,\"awT\",@nobits"; else print "\t.bss"
          print "\t.balign 16\n\t.type " lbl ", " (type == "TLS" ? "@tls_object" : "@object")
          print "\t.size " lbl ", " size "\n" lbl ":\n\t.zero " size
        } else {
          print "\t.text\n\t.type " lbl ", @function"
          print lbl ":\n\txorl %eax, %eax\n\txorl %edx, %edx\n\tpxor %xmm0, %xmm0\n\tret"
        }
        print "\t.globl " lbl
        if (ver != "") {  # the label leaves the symbol table ("remove"); name@@ver stays
          print "\t.symver " lbl ", " name (dflt ? "@@" : "@") ver ", remove"
          if (!(ver in vers)) order[++nv] = ver
          vers[ver] = 1
        }
        count++
      }
      END {
        # A version script naming each version node; unversioned symbols stay unversioned.
        if (nv == 0) print "{ global: *; };" > map
        for (i = 1; i <= nv; i++) print order[i] " { };" > map
      }' > "$asm"
    gcc -shared -nostdlib -fPIC -Wl,-s -Wl,-soname,"$s" -Wl,--version-script="$map" -Wl,--no-undefined -o "$STUBS.new/$s" "$asm" ||
      die "building the stand-in for $s failed ($asm)"
    printf '%s %s %s\n' "$s" "$pkg" "$(grep -c '^[^[:space:]].*:$' "$asm")" >> "$STUBS.new/MANIFEST"
  done
  echo "$stamp" > "$STUBS.new/.stamp"
  rm -rf "$STUBS"; mv "$STUBS.new" "$STUBS"
  rm -rf "$CACHE/real" "$CACHE/src"
fi

# ---- a manifest and the figures ------------------------------------------------------------------------------
{
  echo "# .gpu-deps (tools/gpu/fetch-deps.sh $(date -u +%Y-%m-%dT%H:%MZ)): Debian $(cat /etc/debian_version 2>/dev/null)"
  for p in "${PACKAGES[@]}"; do f=$(deb_name "$p"); printf '%-28s %8d %s\n' "$p" "$(stat -c %s "$DEBS/$f")" "$f"; done
} > "$DEST/MANIFEST"
debs_kib=$(du -sk "$DEBS" | cut -f1); stubs_kib=$(du -sk "$STUBS" | cut -f1); all_kib=$(du -sk "$DEST" | cut -f1)
echo "fetch-deps: ${#PACKAGES[@]} .debs $((debs_kib / 1024)).$(((debs_kib % 1024) * 10 / 1024)) MiB," \
     "$(ls "$STUBS"/*.so* | wc -l) stand-ins ${stubs_kib} KiB; $DEST in all $((all_kib / 1024)).$(((all_kib % 1024) * 10 / 1024)) MiB"
if [ "$all_kib" -gt $((45 * 1024)) ]; then
  echo "fetch-deps: WARNING: $DEST is over 45 MiB; with the repository it may not fit the 64 MiB sent to the GPU machine" >&2
fi
