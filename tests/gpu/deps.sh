#!/usr/bin/env bash
# tests/gpu/deps.sh — the build's non-CUDA libraries (jansson, GLPK, OpenBLAS,
# Open MPI, pkg-config) as one relocatable bundle, for a GPU machine that has
# CUDA but not these and cannot install packages.
#
#   tests/gpu/deps.sh pack FILE.tar.gz   on a Debian/Ubuntu machine where
#                                        scripts/setup has installed them:
#                                        copies their installed files (no
#                                        docs, no static libraries)
#   tests/gpu/deps.sh env ROOT           prints the exports that make a
#                                        bundle unpacked at ROOT usable
#                                        (eval "$(tests/gpu/deps.sh env ROOT)")
#
# tests/gpu/run.sh unpacks and uses a bundle named by PX_GPU_DEPS.  How it is
# made relocatable: /etc/alternatives links become direct relative links,
# pkg-config files say prefix=${pcfiledir}/..., and Open MPI finds its
# plugins and help files through OPAL_PREFIX.  The libraries come from the
# packing machine: the target needs a glibc at least as new (Debian 12's is
# 2.36).
set -u
PKGS="libjansson4 libjansson-dev libglpk40 libglpk-dev libamd2 libcolamd2 libsuitesparseconfig5
      libgmp10 libltdl7 libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0
      libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7
      libevent-pthreads-2.1-7 libpmix2 libmunge2 pkgconf pkgconf-bin libpkgconf3 libudev1 zlib1g"
ARCH=x86_64-linux-gnu

pack() {
  local out=$1 stage p f rel n=0
  case "$out" in /*) ;; *) out="$(pwd)/$out" ;; esac
  stage=$(mktemp -d "${TMPDIR:-/tmp}/px-deps.XXXXXX") || return 1
  trap 'rm -rf "$stage"' RETURN
  for p in $PKGS; do
    if ! dpkg -L "$p" >/dev/null 2>&1; then
      echo "deps.sh: package $p is not installed (scripts/setup installs the set)" >&2
      return 1
    fi
    while IFS= read -r f; do
      case "$f" in
        */share/doc/*|*/share/man/*|*/share/lintian/*|*.a|/.) continue ;;
        */openblas-pthread/liblapack*|*/openblas-pthread/libblas*) continue ;; # unused
      esac
      [ -d "$f" ] && [ ! -L "$f" ] && { mkdir -p "$stage$f"; continue; }
      [ -e "$f" ] || [ -L "$f" ] || continue
      mkdir -p "$stage$(dirname "$f")"
      cp -a "$f" "$stage$f"
      n=$((n + 1))
    done < <(dpkg -L "$p")
  done
  # zlib and libudev (needed by Open MPI's hwloc) are in every usual base
  # image, newer than Debian 12's: put them aside, used only where the
  # machine lacks them (env), so Python and the rest keep the system's.
  for p in z udev; do
    mkdir -p "$stage/usr/lib/$ARCH/fallback/$p"
    mv "$stage/usr/lib/$ARCH/lib$p.so."* "$stage/usr/lib/$ARCH/fallback/$p/" 2>/dev/null
  done
  # The development links Debian routes through /etc/alternatives.
  for f in libopenblas.so libopenblas.so.0; do
    ln -sf "openblas-pthread/$f" "$stage/usr/lib/$ARCH/$f"
  done
  mkdir -p "$stage/usr/include/$ARCH"
  ln -sf openblas-pthread/cblas.h "$stage/usr/include/$ARCH/cblas.h"
  [ -e "$stage/usr/bin/pkg-config" ] || ln -sf pkgconf "$stage/usr/bin/pkg-config"
  for f in mpirun mpiexec mpicc; do # alternatives links too
    [ -e "$stage/usr/bin/$f" ] || ln -sf "$f.openmpi" "$stage/usr/bin/$f"
  done
  # Relocatable .pc files: every /usr becomes the bundle's usr, found from
  # the file's own directory (pkg-config's ${pcfiledir} is the directory it
  # found the file in, a link's, so links become copies first).
  while IFS= read -r f; do
    cp --remove-destination "$(readlink -f "$f")" "$f" 2>/dev/null || rm -f "$f"
  done < <(find "$stage/usr" -name '*.pc' -type l)
  while IFS= read -r f; do
    rel=$(dirname "${f#"$stage"/usr/}" | sed 's#[^/]\{1,\}#..#g')
    sed -i -e "s#^prefix=/usr/*\$#prefix=\${pcfiledir}/$rel#" \
           -e "s#=/usr/#=\${pcfiledir}/$rel/#" "$f"
  done < <(find "$stage/usr" -name '*.pc')
  tar -C "$stage" -czf "$out" usr etc 2>/dev/null || tar -C "$stage" -czf "$out" usr || return 1
  echo "deps.sh: $n files of $(echo $PKGS | wc -w) packages in $out ($(du -h "$out" | cut -f1))"
}

env_of() {
  local r=$1 L
  r=$(cd "$r" && pwd) || return 1
  L="$r/usr/lib/$ARCH:$r/usr/lib/$ARCH/openblas-pthread:$r/usr/lib/$ARCH/openmpi/lib"
  cat <<EOF
export PATH="$r/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$L\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$L\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CPATH="$r/usr/include:$r/usr/include/$ARCH\${CPATH:+:\$CPATH}"
export PKG_CONFIG_PATH="$r/usr/lib/$ARCH/pkgconfig:$r/usr/lib/$ARCH/openblas-pthread/pkgconfig:$r/usr/share/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
export OPAL_PREFIX="$r/usr"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
EOF
  local p
  for p in z udev; do
    echo "ldconfig -p 2>/dev/null | grep -q 'lib$p\\.so\\.1 ' || export LD_LIBRARY_PATH=\"\$LD_LIBRARY_PATH:$r/usr/lib/$ARCH/fallback/$p\""
  done
}

case "${1:-}" in
  pack) [ $# = 2 ] || { echo "usage: deps.sh pack FILE.tar.gz" >&2; exit 2; }; pack "$2" ;;
  env) [ $# = 2 ] || { echo "usage: deps.sh env ROOT" >&2; exit 2; }; env_of "$2" ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; [ "${1:-}" = -h ] || [ "${1:-}" = --help ] ;;
esac
