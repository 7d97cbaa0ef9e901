#!/usr/bin/env bash
# No code outside the backend-name parser (src/naming/backend_kind.*) and the backend folders
# compares a string with a backend's name: everything else asks a BackendKind or a backend's
# capabilities (src/sandbox/backend.h). Prints the offending lines and fails when there are any.
cd "$(dirname "$0")/../.."
offending=$(grep -rnE '[!=]= *"(ns|vm|lima)"|"(ns|vm|lima)" *[!=]=' src --include='*.cc' --include='*.h' |
  grep -vE '^src/(naming/backend_kind\.|backend/)')
if [ -n "$offending" ]; then
  echo "backend names compared outside the parser and src/backend/:"
  echo "$offending"
  exit 1
fi
echo "no backend name comparisons outside src/naming/backend_kind.* and src/backend/"
