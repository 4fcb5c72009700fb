#!/usr/bin/env bash
# npm start: the main job until the browser demo exists. Builds the package and runs the
# hello example over the raw wasm exports.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bash scripts/setup.sh
npm run --silent build
node examples/hello.mjs
