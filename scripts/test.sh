#!/usr/bin/env bash
# npm test: every check, fail fast. The formatting of the TS/JS sources, C tests natively under ASan + UBSan, the fuzz targets
# (their corpus, then a bounded run), the same C tests as wasm under Node, the package build, the Vitest suites against the built dist/, then the
# install tests: the packed tarball installed into an empty project, run in Node and, bundled
# by Vite and as plain modules, in headless Chromium (with the demo page), and last the
# benchmark cases' correctness checks (bench/js, no timing).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Each runner's log is kept, so the closing line can add up what ran.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

step "setup"
bash scripts/setup.sh

# Seconds, and it fails fast: unformatted TS/JS (.prettierrc.json, .prettierignore) fails CI.
step "format: prettier --check"
npx prettier --check .

step "native asan: build"
tes_build asan
step "native asan: ctest"
ctest --preset asan | tee "$logs/asan.txt"

step "fuzz: the snapshot and delta decoders over their corpora, then for 20 s each (libFuzzer, ASan + UBSan)"
tes_build fuzz
ctest --preset fuzz | tee "$logs/fuzz.txt"

step "wasm: build"
tes_build wasm
step "wasm: ctest (C tests under Node)"
ctest --preset wasm | tee "$logs/wasm.txt"

step "package: npm run build"
npm run --silent build
node scripts/check-wasm.mjs dist/tessera.wasm build/wasm/tessera.exports.txt

step "vitest (type-check, then run)"
npx tsc -p tests/js/tsconfig.json
npx vitest run --reporter=default --reporter=json --outputFile="$logs/vitest.json"

step "install tests: npm pack, install into an empty project; Node, Vite + headless Chromium"
npx tsc -p tests/package/tsconfig.json
npx vitest run --config vitest.package.config.ts --reporter=default --reporter=json \
    --outputFile="$logs/install.json"

step "benchmark cases: every contender's setup, one op and its check (no timing)"
node bench/js/run.mjs --check
# The drain after the query helpers costs what changed (issue 16): checked at 1M entities.
node bench/js/drain.mjs --check
step "benchmark page: a Vite build in headless Chromium, one quick case"
node bench/js/run-browser.mjs --quick --cases packed_5 --contenders tessera,raw

# ctest: "100% tests passed, 0 tests failed out of N"; Vitest: its JSON reports.
ctest_total() { grep -oE 'tests failed out of [0-9]+' "$1" | grep -oE '[0-9]+$'; }
vitest_passed() { node -p "require('$1').numPassedTests"; }
passed=$(($(ctest_total "$logs/asan.txt") + $(ctest_total "$logs/fuzz.txt") + $(ctest_total "$logs/wasm.txt") +
    $(vitest_passed "$logs/vitest.json") + $(vitest_passed "$logs/install.json")))
step "all green in ${SECONDS}s"
echo "tests: $passed passed, 0 failed"
