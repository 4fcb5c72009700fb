#!/usr/bin/env bash
# npm test: every check, fail fast. C tests natively under ASan + UBSan, the same C tests as
# wasm under Node, the package build, then the Vitest suites against the built dist/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Each runner's log is kept, so the closing line can add up what ran.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

step "setup"
bash scripts/setup.sh

step "native asan: build"
tes_build asan
step "native asan: ctest"
ctest --preset asan | tee "$logs/asan.txt"

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

# ctest: "100% tests passed, 0 tests failed out of N"; Vitest: its JSON report.
ctest_total() { grep -oE 'tests failed out of [0-9]+' "$1" | grep -oE '[0-9]+$'; }
vitest_passed=$(node -p "require('$logs/vitest.json').numPassedTests")
passed=$(($(ctest_total "$logs/asan.txt") + $(ctest_total "$logs/wasm.txt") + vitest_passed))
step "all green in ${SECONDS}s"
echo "tests: $passed passed, 0 failed"
