#!/usr/bin/env bash
# The package build (npm run build): build/wasm/tessera.wasm, tsc bindings/ -> dist/, and the
# module copied next to the JS as dist/tessera.wasm.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tes_build wasm --target tessera_wasm
npx tsc -p tsconfig.json
cp build/wasm/tessera.wasm dist/tessera.wasm
