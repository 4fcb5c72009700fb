#!/usr/bin/env bash
# npm test: every check, fail fast. C tests natively under ASan + UBSan, the same C tests as
# wasm under Node, the package build, then the Vitest suites against the built dist/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

step "setup"
bash scripts/setup.sh

step "native asan: build"
tes_build asan
step "native asan: ctest"
ctest --preset asan

step "wasm: build"
tes_build wasm
step "wasm: ctest (C tests under Node)"
ctest --preset wasm

step "package: npm run build"
npm run --silent build
node scripts/check-wasm.mjs dist/tessera.wasm build/wasm/tessera.exports.txt

step "vitest (type-check, then run)"
npx tsc -p tests/js/tsconfig.json
npx vitest run

step "all green in ${SECONDS}s"
