#!/usr/bin/env bash
# Installs what is missing on a Debian 12 machine (CI starts without Emscripten).
# Idempotent and quick when everything is there. Runs as root, or through sudo.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

missing_commands=()
apt_packages=()
# need <command> <debian packages...>: queue the packages when the command is missing.
need() {
    local command="$1"
    shift
    if ! command -v "$command" >/dev/null 2>&1; then
        missing_commands+=("$command")
        apt_packages+=("$@")
    fi
}

need emcc emscripten binaryen
need wasm-opt binaryen
need cmake cmake
need gcc gcc
need make make
# The browser tests drive Debian's Chromium through playwright-core (no browser download).
need chromium chromium
# The fuzz targets (tests/fuzz/) build with Clang's libFuzzer, whose runtime is a separate
# package (only recommended by clang-14, and recommends are not installed here).
need clang-14 clang-14 libclang-rt-14-dev
libfuzzer="/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
compgen -G "$libfuzzer" >/dev/null || apt_packages+=(libclang-rt-14-dev)

if ((${#apt_packages[@]})); then
    mapfile -t apt_packages < <(printf '%s\n' "${apt_packages[@]}" | sort -u)
    as_root=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null || die "need root or sudo to install: ${apt_packages[*]}"
        as_root=(sudo)
    fi
    step "apt-get install ${apt_packages[*]} (a minute or two)"
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
    for command in "${missing_commands[@]}"; do
        command -v "$command" >/dev/null || die "$command is still missing after apt-get install"
    done
    compgen -G "$libfuzzer" >/dev/null || die "libFuzzer is still missing after apt-get install"
fi

# package.json's engines: the Node versions whose require() loads ES modules (the package tests use it).
command -v node >/dev/null || die "node (20.19 or newer) is required"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)' ||
    die "node $(node --version) is too old: 20.19+ (or 22.12+) is required"
command -v npm >/dev/null || die "npm is required"

# npm writes node_modules/.package-lock.json on every install: compare against that.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    step "npm ci"
    npm ci --no-audit --no-fund
fi
