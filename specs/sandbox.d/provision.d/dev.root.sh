#!/usr/bin/env bash
# Profile "dev", its root phase: a general build environment from Debian packages only (compilers,
# Python with venv, Node with npm, git, CMake, pkg-config). tnk runs this inside the sandbox as root,
# before dev.sh, with nothing of the agent's on its PATH (docs/specs.md, "Two phases").
set -Eeuo pipefail
umask 022

# shellcheck source=lib/provision-lib.sh
source "$(dirname "$0")/lib/provision-lib.sh"

DEV_PACKAGES=(build-essential python3 python3-venv nodejs npm git cmake pkg-config)

echo "[PROC] development environment provisioning..."
_lib_apt_install "${DEV_PACKAGES[@]}"
echo "[ OK ] development environment ready: ${DEV_PACKAGES[*]}"
