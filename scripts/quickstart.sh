#!/usr/bin/env bash
# The README's first command: install what tnk needs, build it, and run the main job on a demo
# project. The demo uses its own HOME (.demo/home) so it never touches your ~/.config or ~/code;
# set TNK_DEMO_HOME to put it elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/install-deps.sh
bash scripts/build.sh build
tnk="$repo/build/tnk"

# The sandbox image is cached in your own cache directory, so it is built once per machine.
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}"
export HOME="${TNK_DEMO_HOME:-$repo/.demo/home}"
unset XDG_CONFIG_HOME XDG_STATE_HOME
project="$HOME/code/tnk-demo"
mkdir -p "$project/src"
[ -f "$project/README.md" ] || printf '# tnk demo project\n' >"$project/README.md"
[ -f "$project/src/hello.py" ] || printf 'print("hello from the sandbox")\n' >"$project/src/hello.py"

run() { echo; echo "\$ $*"; "$@"; }
cd "$project"
if [ ! -d "$HOME/.config/tnk/sandbox.d" ]; then run "$tnk" init; fi
run "$tnk" doctor
run "$tnk" sandbox inspect
run "$tnk" sandbox start --profile base   # the bundled default, pi, also installs the pi agent (minutes)
run "$tnk" sandbox exec -- sh -c 'ls -la /workspace && env | grep "^TNK_" | sort'
echo
echo "demo HOME: $HOME  (export HOME=$HOME to keep using it; project: $project)"
echo "the sandbox keeps running: \`tnk sandbox shell\` enters it, \`tnk sandbox stop\` stops it"
