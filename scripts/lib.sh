# SPDX-License-Identifier: GPL-2.0-or-later
#
# Shell helpers shared by configure and the scripts in scripts/.
# Source it; it defines functions and a few variables, nothing runs.

# The clone this file belongs to.
PL_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Downloaded upstream sources live outside the clone so that a fresh
# clone, or `make clean`, does not download them again.
PL_CACHE_DIR=${QEMU_PSEUDOLOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-pseudolock}

pl_prog=$(basename "$0")

pl_die() {
    printf '%s: error: %s\n' "$pl_prog" "$*" >&2
    exit 1
}

pl_hint() {
    printf '%s:   %s\n' "$pl_prog" "$*" >&2
}

pl_note() {
    printf '%s: %s\n' "$pl_prog" "$*"
}

# Load upstream.pins into the environment.
pl_load_pins() {
    local pins="$PL_TOP/upstream.pins"
    [ -r "$pins" ] || pl_die "cannot read $pins"
    # shellcheck disable=SC1090
    . "$pins"
}

pl_sha256() {
    sha256sum "$1" | cut -d' ' -f1
}

# pl_verify_sha256 FILE EXPECTED PIN_NAME: fail naming the file, both
# checksums and the pin that disagrees.
pl_verify_sha256() {
    local file=$1 want=$2 pin=$3 got
    got=$(pl_sha256 "$file")
    if [ "$got" != "$want" ]; then
        printf '%s: error: checksum mismatch for %s\n' "$pl_prog" "$file" >&2
        pl_hint "expected $want ($pin in upstream.pins)"
        pl_hint "actual   $got"
        pl_hint "if the pin is what is wrong, 'scripts/bump-pin' sets version and checksum together"
        exit 1
    fi
}

# pl_libvirt_disabled BUILD-DIR: ./configure ran there with
# --disable-libvirt (config.status repeats its options)
pl_libvirt_disabled() {
    grep -q -e '--disable-libvirt' "$1/config.status" 2>/dev/null
}

pl_need_root() {
    [ "$(id -u)" = 0 ] && return 0
    command -v sudo >/dev/null 2>&1 && [ -z "${CI:-}" ] && { PL_SUDO=sudo; return 0; }
    pl_die "$1 needs root (run as root, or install sudo)"
}
PL_SUDO=
