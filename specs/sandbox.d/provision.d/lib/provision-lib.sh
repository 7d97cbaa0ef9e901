# shellcheck shell=bash
# provision-lib.sh: helpers shared by the profile scripts in provision.d/. Sourced, never executed:
#   source "$(dirname "$0")/lib/provision-lib.sh"
#
# Owns the guest-side provision token ("fingerprint") and small install helpers. Compatible with the
# original tnk-specs library: same function names, the same token file
# ${XDG_STATE_HOME:-$HOME/.local/state}/tnk/provision.lock and the same messages. Unlike the original,
# each profile also keeps its own token (provision-<profile>.lock), so alternating profiles in one
# sandbox no longer reinstall each other every time; provision.lock is still written for specs that read
# it. tnk itself decides on the host whether a provisioning run is needed; the token only lets a script
# skip work that an earlier run already did.

# --- messages ---------------------------------------------------------------------------------------
# Progress goes to stdout, problems to stderr; tnk streams both to the terminal and the audit log.
_lib_log() {
	local level=$1
	shift
	printf '[%s] %s\n' "$level" "$*"
}
_lib_info() { _lib_log INFO "$@"; }
_lib_warn() { _lib_log WARN "$@" >&2; }
_lib_error() { _lib_log ERR "$@" >&2; }
_lib_die() {
	_lib_error "$@"
	exit 1
}

# --- provision token ----------------------------------------------------------------------------------
# On a failed run, both tokens are dropped so the next run starts over.
# shellcheck disable=SC2317 # invoked by the EXIT trap
_lib_cleanup_handler() {
	local exit_code=$?
	if [[ $exit_code -ne 0 ]]; then
		echo "[ERR] unexpected script termination. dropping tracking tokens." >&2
		local token
		for token in "${LOCK_FILE:-}" "${PROFILE_LOCK_FILE:-}"; do
			if [[ -n $token ]]; then
				rm -f -- "$token"
			fi
		done
	fi
	exit "$exit_code"
}

# Replaces any EXIT trap the script had set.
_lib_setup_trap() {
	trap _lib_cleanup_handler EXIT
}

_lib_lock_dir() {
	printf '%s\n' "${XDG_STATE_HOME:-$HOME/.local/state}/tnk"
}

_lib_token_matches() {
	local file=$1
	[[ -f $file ]] && [[ "$(cat -- "$file" 2>/dev/null || true)" == "$ENV_FINGERPRINT" ]]
}

# _lib_init_provision_state PROFILE [ARG...]
# Computes the fingerprint "PROFILE|TNK_SPECS_REV|ARG|ARG..." and exits 0 when this profile's token
# (or, as in the original, the shared provision.lock) already holds it. Installs an EXIT trap.
_lib_init_provision_state() {
	local profile="${1:-}"
	if [[ ! $profile =~ ^[A-Za-z0-9_-]+$ ]]; then
		_lib_error "_lib_init_provision_state: invalid profile name '${profile}'"
		exit 1
	fi
	shift

	local specs_rev="${TNK_SPECS_REV:-unknown-spec-rev}"

	LOCK_DIR="$(_lib_lock_dir)"
	mkdir -p -- "$LOCK_DIR"
	LOCK_FILE="$LOCK_DIR/provision.lock"
	PROFILE_LOCK_FILE="$LOCK_DIR/provision-${profile}.lock"
	local IFS='|'
	ENV_FINGERPRINT="${profile}|${specs_rev}|${*}"

	_lib_setup_trap

	if _lib_token_matches "$PROFILE_LOCK_FILE" || _lib_token_matches "$LOCK_FILE"; then
		echo "[INFO] environment match detected for '${profile}'. skipping provision run."
		exit 0
	fi

	echo "[PROC] initiating installation tracking context for '${profile}'..."
}

_lib_write_token() {
	local file=$1 tmp="$1.tmp.$$"
	(umask 077 && printf '%s\n' "$ENV_FINGERPRINT" >"$tmp")
	chmod 0600 -- "$tmp"
	mv -f -- "$tmp" "$file"
}

# Records the fingerprint computed by _lib_init_provision_state; call it last, after a successful run.
_lib_finalize_provision_state() {
	if [[ -z "${LOCK_FILE:-}" ]] || [[ -z "${ENV_FINGERPRINT:-}" ]]; then
		echo "[ERR] provision tracing primitives missing initialization." >&2
		exit 1
	fi
	_lib_write_token "$PROFILE_LOCK_FILE"
	_lib_write_token "$LOCK_FILE"
}

# _lib_forget_provision_state PROFILE
# Drops PROFILE's tokens so that the next _lib_init_provision_state runs the install again. For scripts
# that notice their installation is gone although the token says it is there.
_lib_forget_provision_state() {
	local profile="${1:-}" dir shared
	if [[ ! $profile =~ ^[A-Za-z0-9_-]+$ ]]; then
		_lib_error "_lib_forget_provision_state: invalid profile name '${profile}'"
		return 1
	fi
	dir="$(_lib_lock_dir)"
	rm -f -- "$dir/provision-${profile}.lock"
	shared="$dir/provision.lock"
	if [[ -f $shared ]] && [[ "$(cat -- "$shared" 2>/dev/null || true)" == "${profile}|"* ]]; then
		rm -f -- "$shared"
	fi
}

# --- environment ------------------------------------------------------------------------------------
# _lib_require_env VAR...: fails, naming every missing one, unless all are set and non-empty.
_lib_require_env() {
	local name missing=()
	for name in "$@"; do
		if [[ ! $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
			_lib_error "_lib_require_env: invalid variable name '${name}'"
			return 1
		fi
		if [[ -z "${!name:-}" ]]; then
			missing+=("$name")
		fi
	done
	if [[ ${#missing[@]} -ne 0 ]]; then
		_lib_error "missing environment: ${missing[*]} (tnk sets these when it provisions a sandbox)"
		return 1
	fi
}

# --- packages ---------------------------------------------------------------------------------------
# Runs a command as root, which only a profile's root phase is: tnk runs provision.d/<p>.root.sh as root
# first, then <p>.sh as the agent, without sudo and with no_new_privs, so that nothing an agent session
# planted ever runs as root (tnk's security review, M3). Called from the agent phase, it says so and fails.
_lib_as_root() {
	local script=${0##*/}
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	else
		_lib_error "need root for: $* (${script} runs as the agent, without sudo: move it into" \
			"provision.d/${script%.sh}.root.sh, which tnk runs as root first; docs/specs.md, \"Two phases\")"
		return 1
	fi
}

_lib_apt_installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# _lib_apt_all_installed PKG...: true when every package is installed.
_lib_apt_all_installed() {
	local pkg
	for pkg in "$@"; do
		if ! _lib_apt_installed "$pkg"; then
			return 1
		fi
	done
}

# _lib_apt_install PKG...: installs the packages that are missing, from the sandbox image's Debian
# mirror, without recommends and without questions; in the root phase only (_lib_as_root). The proxy
# variables that tnk sets for provisioning are passed on explicitly.
_lib_apt_install() {
	local pkg missing=() env_args=(DEBIAN_FRONTEND=noninteractive) var
	for pkg in "$@"; do
		if [[ ! $pkg =~ ^[a-z0-9][a-z0-9+.-]*(:[a-z0-9]+)?$ ]]; then
			_lib_error "_lib_apt_install: invalid package name '${pkg}'"
			return 1
		fi
		if ! _lib_apt_installed "$pkg"; then
			missing+=("$pkg")
		fi
	done
	if [[ ${#missing[@]} -eq 0 ]]; then
		return 0
	fi
	for var in http_proxy https_proxy HTTP_PROXY HTTPS_PROXY no_proxy NO_PROXY; do
		if [[ -n "${!var:-}" ]]; then
			env_args+=("${var}=${!var}")
		fi
	done
	# No translated package descriptions: a third of what `apt-get update` fetches, and nothing here reads them.
	local apt=(env "${env_args[@]}" apt-get -q -o Acquire::Retries=3 -o Acquire::Languages=none)
	_lib_info "installing Debian packages: ${missing[*]}"
	if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
		_lib_as_root "${apt[@]}" update
	fi
	if ! _lib_as_root "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
		_lib_warn "apt-get install failed; refreshing the package lists and trying once more"
		_lib_as_root "${apt[@]}" update
		_lib_as_root "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
	fi
}

# --- files ------------------------------------------------------------------------------------------
# _lib_append_once FILE LINE: appends LINE unless FILE already has it as a whole line.
_lib_append_once() {
	local file=$1 line=$2
	if [[ -f $file ]] && grep -qxF -- "$line" "$file"; then
		return 0
	fi
	if [[ -s $file ]] && [[ -n "$(tail -c 1 -- "$file")" ]]; then
		printf '\n' >>"$file"
	fi
	printf '%s\n' "$line" >>"$file"
}

# _lib_json_string VALUE: prints VALUE as a JSON string literal; refuses control characters.
_lib_json_string() {
	local s=$1
	if [[ $s == *[[:cntrl:]]* ]]; then
		_lib_error "_lib_json_string: value contains a control character"
		return 1
	fi
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}
