#!/usr/bin/env bash
# npm run bench:core — the C core's micro-benchmarks, native and wasm side by side.
#
# Builds bench_core (storage) and bench_changes (change detection) in build/release (native
# -O3) and build/wasm (emcmake, -O3 -msimd128) the way scripts/ do, then bench/run-core.mjs
# runs each program's native and wasm builds alternately and writes bench/results/core.md +
# core.json and bench/results/changes.md + changes.json. Arguments go to run-core.mjs, e.g.
#   bash bench/run-core.sh --rounds 3 --callgrind
#   bash bench/run-core.sh --quick                  # smoke run: short runs, one round
#   bash bench/run-core.sh --programs changes       # only bench_changes
#   bash bench/run-core.sh -- --only 'iterate*'     # after --: passed to the programs
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh" # strict mode, cd to the repo root

command -v emcc >/dev/null 2>&1 || bash scripts/setup.sh

step "build bench_core, bench_changes (native, build/release)"
tes_build release --target bench_core --target bench_changes
step "build bench_core, bench_changes (wasm, build/wasm)"
tes_build wasm --target bench_core --target bench_changes

step "run"
exec node bench/run-core.mjs "$@"
