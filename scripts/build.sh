#!/usr/bin/env bash
# The package build (npm run build): build/wasm/tessera.wasm, bindings/abi.ts written from the
# build's layout, tsc bindings/ -> dist/, and the module copied next to the JS as
# dist/tessera.wasm. dist/ starts empty, so it holds exactly
# what the package ships (files: ["dist"]): no leftovers of renamed or deleted sources.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tes_build wasm --target tessera_wasm --target tes_abi
# The layout and constants the bindings read, from the build itself (tools/abi.c).
node build/wasm/tes_abi.cjs > bindings/abi.ts.new
mv bindings/abi.ts.new bindings/abi.ts
rm -rf dist
npx tsc -p tsconfig.json
install -m 644 build/wasm/tessera.wasm dist/tessera.wasm
