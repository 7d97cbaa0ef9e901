# Every dependency comes from a Debian package; a missing one names the package to install.
function(tnk_require package debian_package)
  find_package(${package} QUIET ${ARGN})
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "${package} not found: run `sudo apt-get install ${debian_package}` "
      "(or scripts/install-deps.sh, which installs everything tnk needs)")
  endif()
endfunction()

tnk_require(CLI11 libcli11-dev)
tnk_require(tomlplusplus libtomlplusplus-dev)
tnk_require(nlohmann_json nlohmann-json3-dev)
tnk_require(fmt libfmt-dev)
tnk_require(yaml-cpp libyaml-cpp-dev)
# libseccomp ships no CMake config: found through pkg-config.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(SECCOMP IMPORTED_TARGET libseccomp)
endif()
if(NOT SECCOMP_FOUND)
  message(FATAL_ERROR "libseccomp not found: run `sudo apt-get install libseccomp-dev pkg-config` "
    "(or scripts/install-deps.sh, which installs everything tnk needs)")
endif()
if(TNK_BUILD_TESTS)
  tnk_require(GTest "libgtest-dev libgmock-dev")
endif()
