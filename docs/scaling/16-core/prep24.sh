#!/usr/bin/env bash
# prep24.sh DIR: lays out in DIR what run24.sh needs beside it, from this
# repository (run from its root, at f1d437a or later) and ../shared/data:
# mpicheck and xmc-mpi of f1d437a, mpicheck-prev and xmc-mpi-prev of 9088381
# (MPI builds against Debian's OpenMPI), ompi.tgz from prep23.sh's layout
# in DIR23 (the OpenMPI files the MPI builds link against) and
# data/wordnet-mc. DIR should be an ignored folder of the repository,
# carried to the device (about 30 MiB).
# Usage: prep24.sh DIR DIR23
set -eu
DIR=$1; mkdir -p "$DIR/data/wordnet-mc"; DIR=$(cd "$DIR" && pwd)
cp docs/scaling/16-core/run24.sh "$2/ompi.tgz" "$DIR/"
cp ../shared/data/wordnet-mc/train.txt.gz ../shared/data/wordnet-mc/test.txt.gz "$DIR/data/wordnet-mc/"
build() { # SRC SUFFIX
  (cd "$1" && go build -ldflags="-s -w" -tags mpi -o "$DIR/xmc-mpi$2" . &&
    go build -ldflags="-s -w" -tags mpi -o "$DIR/mpicheck$2" ./mpi/internal/mpicheck); }
W=$(mktemp -d); git worktree add -q --detach "$W" f1d437a; build "$W" ""; git worktree remove --force "$W"
W=$(mktemp -d); git worktree add -q --detach "$W" 9088381
# The bench's cases of f1d437a, so that both builds time the same ones.
git show f1d437a:mpi/internal/mpicheck/bench.go > "$W/mpi/internal/mpicheck/bench.go"
build "$W" -prev; git worktree remove --force "$W"
du -sh "$DIR"
