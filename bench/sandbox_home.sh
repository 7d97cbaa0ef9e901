# Sourced by the bench scripts: a throwaway HOME with one project, the user's cache (the image and
# kernel are built once per machine), every sandbox shut down and the HOME removed at exit.
# Needs $tnk; leaves the shell in $project.
work=$(mktemp -d /tmp/tnk-bench-XXXXXX)
cache=${XDG_CACHE_HOME:-$HOME/.cache}
trap 'HOME=$work/home XDG_CACHE_HOME=$cache "$tnk" shutdown --timeout 2 >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p "$work/home/code/bench"
export HOME=$work/home XDG_CACHE_HOME=$cache TNK_SERVER_PORT=9
project=$HOME/code/bench
# tnk refuses a project root owns (its agent would write as host root): run by root, a stand-in owns it.
[ "$(id -u)" -ne 0 ] || chown 4242:4242 "$project"
cd "$project"
