# Sourced by the bench scripts: a throwaway HOME with one project, the user's cache (the image and
# kernel are built once per machine), every sandbox shut down and the HOME removed at exit.
# Needs $tnk; leaves the shell in $project.
work=$(mktemp -d /tmp/tnk-bench-XXXXXX)
cache=${XDG_CACHE_HOME:-$HOME/.cache}
# `sandbox delete` removes what a rootless sandbox's user namespace owns (the overlay's files belong to
# the user's subordinate range, which plain rm cannot remove).
trap 'cd "$work/home/code/bench" && HOME=$work/home XDG_CACHE_HOME=$cache "$tnk" sandbox delete --yes >/dev/null 2>&1;
      HOME=$work/home XDG_CACHE_HOME=$cache "$tnk" shutdown --timeout 2 >/dev/null 2>&1 || true; cd /; rm -rf "$work"' EXIT
mkdir -p "$work/home/code/bench"
export HOME=$work/home XDG_CACHE_HOME=$cache TNK_SERVER_PORT=9
project=$HOME/code/bench
# tnk refuses a project root owns (its agent would write as host root): run by root, a stand-in owns it.
if [ "$(id -u)" -eq 0 ]; then
  chown 4242:4242 "$project"
  chmod 755 "$work" "$work/home" "$work/home/code"  # the owner's side of a benchmark runs there as 4242
fi
cd "$project"
