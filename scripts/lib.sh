# Shared helpers for scripts/*.sh. Source it; it sets strict mode and cds to the repo root.
set -euo pipefail

TES_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$TES_ROOT"

# step <title>: a visible header per phase, with the seconds since the script started.
step() {
    printf '\n== [%4ss] %s\n' "$SECONDS" "$*"
}

die() {
    printf 'tessera: %s\n' "$*" >&2
    exit 1
}

# tes_configure <preset>: configure build/<preset> (cheap when already configured).
# The wasm preset goes through emcmake, which adds the Emscripten toolchain file.
tes_configure() {
    local preset="$1"
    if [[ "$preset" == wasm ]]; then
        command -v emcmake >/dev/null || die "emcmake not found: run scripts/setup.sh"
        emcmake cmake --preset "$preset" >/dev/null
    else
        cmake --preset "$preset" >/dev/null
    fi
}

# tes_build <preset> [cmake --build args...]
tes_build() {
    local preset="$1"
    shift
    tes_configure "$preset"
    cmake --build --preset "$preset" "$@"
}
