# The Debian package (CPack): scripts/package.sh configures a Release tree with the prefix /usr and
# runs `cpack -G DEB` in it; tests/e2e/test_package.py installs, uses and removes what it makes.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tnk)
set(CPACK_PACKAGE_VENDOR "tnk")
set(CPACK_PACKAGE_CONTACT "tnk developers <tnk@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "isolated per-project sandboxes for AI coding agents")
set(CPACK_PACKAGE_DESCRIPTION "tnk gives every project its own sandbox (Linux namespaces or a QEMU micro VM) \
in which a coding agent can install packages, run commands and call the host's model without reaching the \
host's secrets or other projects. Run as an ordinary user; `sudo tnk setup --user NAME` prepares a host.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The libraries tnk links (libc only: libstdc++, toml++, yaml-cpp and libseccomp are linked in) come from
# dpkg-shlibdeps; the programs it runs, and OpenSSL, which it loads when a credential route needs TLS
# (dlopen, so no shlibdeps), are listed by hand:
#   Depends     the ns backend: sandbox images (mmdebstrap), rootless id maps (uidmap), ext4 tools;
#               libssl.so.3 (libssl3 on Debian 12, libssl3t64 on Debian 13)
#   Recommends  the vm backend (QEMU with virtiofsd, the guest kernel's build
#               from Debian's kernel source), completion in bash
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "mmdebstrap, uidmap, e2fsprogs, ca-certificates, libssl3 | libssl3t64")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "qemu-system-x86, qemu-utils, linux-source-6.1, xz-utils, make, gcc, \
bc, flex, bison, libelf-dev, bash-completion")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "zsh, fish")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
  ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
