import { defineConfig } from 'vitest/config';

// The JS suites run against the built package (dist/): `npm run build` first.
export default defineConfig({
    test: {
        include: ['tests/js/**/*.test.ts'],
        environment: 'node',
        testTimeout: 60_000,
    },
});
