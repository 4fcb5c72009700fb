#!/usr/bin/env bash
# npm start: the main job. Installs what is missing, builds the package (the wasm module and
# dist/), then serves the repository root on 127.0.0.1 with web/serve.mjs and prints the URL of
# the particle demo (demo/). Port 8080, or the next free one; PORT=n insists on n (0: any).
# Stays in the foreground until Ctrl-C.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bash scripts/setup.sh
npm run --silent build

step "serving the demo"
exec node --input-type=module - "${PORT:-}" <<'JS'
import { serve } from './web/serve.mjs';

const requested = process.argv[2];
const ports = requested ? [Number(requested)] : Array.from({ length: 20 }, (_, i) => 8080 + i);
for (const port of ports) {
    try {
        const { url } = await serve('.', port);
        console.log(`tessera demo: ${url}demo/`);
        console.log('(Ctrl-C to stop)');
        break;
    } catch (error) {
        if (error.code !== 'EADDRINUSE' || port === ports.at(-1)) {
            console.error(`tessera: cannot serve on 127.0.0.1:${port}: ${error.message}`);
            process.exit(1);
        }
    }
}
JS
