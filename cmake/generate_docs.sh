#!/bin/sh
# Writes the manual page and the completion scripts of the tnk binary $1 into the directory $2.
set -eu
"$1" manpage >"$2/tnk.1"
"$1" completion bash >"$2/tnk.bash"
"$1" completion zsh >"$2/_tnk"
"$1" completion fish >"$2/tnk.fish"
