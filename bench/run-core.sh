#!/usr/bin/env bash
# npm run bench:core — the storage core's micro-benchmark, native and wasm side by side.
#
# Builds bench_core in build/release (native -O3) and build/wasm (emcmake, -O3 -msimd128) the
# way scripts/ do, then bench/run-core.mjs runs both programs alternately and writes
# bench/results/core.md and core.json. Arguments go to run-core.mjs, e.g.
#   bash bench/run-core.sh --rounds 3 --callgrind
#   bash bench/run-core.sh --quick                  # smoke run: short runs, one round
#   bash bench/run-core.sh -- --only 'iterate*'     # after --: passed to bench_core
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh" # strict mode, cd to the repo root

command -v emcc >/dev/null 2>&1 || bash scripts/setup.sh

step "build bench_core (native, build/release)"
tes_build release --target bench_core
step "build bench_core (wasm, build/wasm)"
tes_build wasm --target bench_core

step "run"
exec node bench/run-core.mjs "$@"
