import { defineConfig } from 'vitest/config';

// The install tests: the package as a user gets it. The global setup packs a clean checkout of
// the repository (`npm pack` builds what it ships: the prepack script) and installs the tarball
// into an empty temp project; tests/package checks it in Node, tests/browser bundles it with
// Vite and loads it in headless Chromium (the demo test serves the repository's own dist/).
export default defineConfig({
    test: {
        include: ['tests/package/**/*.test.ts', 'tests/browser/**/*.test.ts'],
        globalSetup: ['tests/package/install.ts'],
        environment: 'node',
        testTimeout: 60_000,
        hookTimeout: 120_000,
    },
});
