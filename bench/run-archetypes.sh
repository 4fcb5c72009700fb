#!/usr/bin/env bash
# npm run bench:archetypes — how archetypes scale with the number of component types a world
# knows (bench/c/archetypes.c, native -O3): writes bench/results/archetypes.md.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh" # strict mode, cd to the repo root

step "build bench_archetypes (native, build/release)"
tes_build release --target bench_archetypes
step "run"
{
    echo "# Archetypes and the number of component types (\`npm run bench:archetypes\`)"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) · $(uname -m) · native gcc -O3 · tessera at $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo
    echo "20,000 rounds of: spawn an entity with 3 random tag types of T, add a 4th, despawn it (bench/c/archetypes.c)."
    echo "Archetypes left are empty ones; bytes left is what the world holds after the rounds beyond what it held before them. Then one tes_archetypes_reclaim: its time, how many it freed, and the bytes left after it."
    echo
    ./build/release/bench/bench_archetypes
} | tee bench/results/archetypes.md
