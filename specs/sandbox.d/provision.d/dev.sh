#!/usr/bin/env bash
# Profile "dev": a general build environment from Debian packages only (compilers, Python with venv,
# Node with npm, git, CMake, pkg-config). tnk runs this inside the sandbox as the sandbox user.
set -Eeuo pipefail
umask 077

# shellcheck source=lib/provision-lib.sh
source "$(dirname "$0")/lib/provision-lib.sh"

PROFILE_REV="2026-11-29.1"
DEV_PACKAGES=(build-essential python3 python3-venv nodejs npm git cmake pkg-config)

echo "[PROC] development environment provisioning..."

# A package removed since the last run makes the token stale.
if ! _lib_apt_all_installed "${DEV_PACKAGES[@]}"; then
	_lib_forget_provision_state dev
fi
_lib_init_provision_state "dev" "$PROFILE_REV" "${DEV_PACKAGES[@]}"

_lib_apt_install "${DEV_PACKAGES[@]}"

_lib_finalize_provision_state
echo "[ OK ] development environment ready: ${DEV_PACKAGES[*]}"
