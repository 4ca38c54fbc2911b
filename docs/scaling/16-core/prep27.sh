#!/usr/bin/env bash
# prep27.sh DIR: lays out in DIR what run27.sh needs beside it, from this
# repository (run from its root) and ../shared/data: xmc and xmc-mpi of HEAD,
# xmc-prev and xmc-mpi-prev of 873be93 (run 23's build), static pure-Go builds
# and MPI builds against Debian's OpenMPI; ompi.tgz (the files of the OpenMPI
# packages the MPI builds link against); data/wordnet-mc and data/delicious
# (the bundled copy). DIR should be an ignored folder of the repository,
# carried to the device (64 MiB at most: about 47 MiB).
# Usage: prep27.sh DIR
set -eu
DIR=$1; mkdir -p "$DIR/data/wordnet-mc"
cp docs/scaling/16-core/run27.sh "$DIR/"
cp ../shared/data/wordnet-mc/train.txt.gz ../shared/data/wordnet-mc/test.txt.gz "$DIR/data/wordnet-mc/"
cp -r testdata/delicious "$DIR/data/"
DIR=$(cd "$DIR" && pwd)
build() { # SRC SUFFIX
  (cd "$1" && CGO_ENABLED=0 go build -buildvcs=auto -ldflags="-s -w" -o "$DIR/xmc$2" . && go build -buildvcs=auto -ldflags="-s -w" -tags mpi -o "$DIR/xmc-mpi$2" .); }
build . ""
W=$(mktemp -d); git worktree add -q --detach "$W" 873be93
build "$W" -prev
git worktree remove --force "$W"
# The OpenMPI packages and those of every library that the MPI build, the
# launcher and OpenMPI's plugins link against (the node has none of them).
libs() { ldd "$@" 2>/dev/null | awk '$3 ~ /^\// {print $3}'; }
plugins=$(dpkg -L libopenmpi3t64 libopenmpi3 2>/dev/null | grep '\.so' || true)
pkgs=$( { echo openmpi-bin; echo openmpi-common
  for f in $(libs "$DIR/xmc-mpi" "$(command -v orterun)" "$(command -v orted)" $plugins | sort -u); do
    dpkg -S "$(readlink -f "$f")" 2>/dev/null | cut -d: -f1; done; } | sort -u | grep -v -x -E 'libc6|libgcc-s1|libstdc\+\+6|zlib1g' )
tar -czf "$DIR/ompi.tgz" -C / $(dpkg -L $pkgs | while read -r f; do [ -f "$f" ] && echo "${f#/}"; done)
echo "ompi.tgz: $pkgs" | tr '\n' ' '; echo
du -sh "$DIR"
