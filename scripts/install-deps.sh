#!/usr/bin/env bash
# Installs everything tnk needs to build, test and run, from Debian's packages (apt-get only).
# Idempotent and quick when everything is already there. `--list` prints the package names, one per
# line, and installs nothing: what a fresh machine gets (npm included), for tests/hosts/build_image.py.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git clang-format ccache
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libyaml-cpp-dev libseccomp-dev
  libgtest-dev libgmock-dev
  # the route gateway's TLS to its upstreams
  libssl-dev
  # run: the image build (ns and vm backends); uidmap: newuidmap/newgidmap, with which an ordinary
  # user maps a rootless sandbox (and mmdebstrap's unshare mode) onto its subordinate ids
  mmdebstrap uidmap
  # run: the vm backend (QEMU microvm, virtiofsd from qemu-system-common, qcow2 overlays, ext4 base disks)
  qemu-system-x86 qemu-utils e2fsprogs
  # the vm backend's small guest kernel, compiled once per machine from Debian's kernel source
  linux-source-6.1 xz-utils make gcc bc flex bison libelf-dev
  # tests (run with Debian's /usr/bin/python3; npm answers `@npm` in provision.allow; the lima tests
  # read the Lima YAML tnk writes) and benchmarks
  python3 python3-pytest python3-yaml bubblewrap hyperfine
  # the install and package tests: `man tnk`, and bash, zsh and fish completing `tnk <TAB>` by themselves
  man-db bash-completion zsh fish
  # the network tests and bench/net.sh (a test host in its own network namespace, a private /etc/hosts)
  iproute2 util-linux curl
  # the SSH route's tests: a stand-in OpenSSH server (their own sshd, never the system's service) and
  # ssh, ssh-agent and ssh-keygen on the host
  openssh-server openssh-client
  # fuzzing (scripts/fuzz.sh: clang's libFuzzer with ASan/UBSan)
  clang libclang-rt-14-dev
)
if [ "${1:-}" = --list ]; then printf '%s\n' "${packages[@]}" npm kubernetes-client; exit 0; fi
# npm resolves `@npm` in provision.allow; a Node.js install that already ships it is kept.
command -v npm >/dev/null 2>&1 || packages+=(npm)
# kubectl: the k8s backend reaches a cluster through it (and its tests the stand-in API server); one that
# another package installed (a cloud SDK's) is kept, as Debian's would conflict with it.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
