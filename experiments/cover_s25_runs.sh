#!/bin/sh
# The cover bound (60 s, from the simple bound, cached UB) on the 9 pairs of
# `bench bounds`, with one pricing ($1: mip, hybrid or bnb); one line per pair.
# Session 25: `sh experiments/cover_s25_runs.sh mip & sh experiments/cover_s25_runs.sh hybrid &`
for g in 0 1 2; do
  for k in 4 8 16; do
    nice python experiments/cover_s25_probe.py $g $k 60 "$1" | tail -1
  done
done
