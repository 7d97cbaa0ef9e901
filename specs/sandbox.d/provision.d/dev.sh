#!/usr/bin/env bash
# Profile "dev", its agent phase: the packages are dev.root.sh's work, done as root before this runs.
# This part runs as the sandbox user, without sudo, and only records the run: its token is what the
# original tnk's scripts read, and deleting it asks `tnk sandbox start` for a new run.
set -Eeuo pipefail
umask 077

# shellcheck source=lib/provision-lib.sh
source "$(dirname "$0")/lib/provision-lib.sh"

PROFILE_REV="2026-12-07.1"

_lib_init_provision_state "dev" "$PROFILE_REV"
_lib_finalize_provision_state
