#!/usr/bin/env bash
# prep26.sh DIR: lays out in DIR what run26.sh needs beside it, from this
# repository (run from its root, at b90f279 or later): xmc of b90f279 (the
# forest's frontier, its help and k-means updates on the helpers, and a
# rank's idle workers helping its last trees grown alone) and xmc-prev of
# f4eb17c (a tree's nodes dealt a level at a time, no help), both pure Go
# and static. DIR should be an ignored folder of the repository, carried
# to the device (about 20 MiB).
# Usage: prep26.sh DIR
set -eu
DIR=$1; mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
cp docs/scaling/16-core/run26.sh "$DIR/"
build() { # REV NAME
  W=$(mktemp -d); git worktree add -q --detach "$W" "$1"
  (cd "$W" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$DIR/$2" .); git worktree remove --force "$W"; }
build b90f279 xmc; build f4eb17c xmc-prev
du -sh "$DIR"
