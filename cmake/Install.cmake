# The install layout (docs/install.md). tnk finds each of its files relative to its own binary, so an
# install works under any prefix (/usr/local by default, ~/.local, /usr for the package) and the build
# tree works as it is:
#   bin/tnk                                     the tool
#   libexec/tnk/tnk-agent                       the vm backend's guest agent (beside tnk in the build tree)
#   libexec/tnk/tnk-disk                        mounts an ns sandbox's own disk; `sudo tnk setup --user NAME
#                                               --disk-allowance SIZE` makes it set-user-id root (beside tnk too)
#   share/tnk/specs/, share/tnk/kernel/         the bundled specs, the guest kernel's config fragment
#   share/man/man1/tnk.1                        the manual page, written by `tnk manpage`
#   share/bash-completion/completions/tnk       loaded by bash-completion on the first `tnk <TAB>`
#   share/zsh/{site-functions,vendor-completions}/_tnk, share/fish/vendor_completions.d/tnk.fish
include(GNUInstallDirs)

# The build tree: share/tnk/ beside the binary (tnk is built in the top of the build tree), as an install
# has it beside its bin/. Copied again whenever a file below specs/ or kernel/ changes (an edited profile
# script, not only a new binary), or when the copy is gone.
file(GLOB_RECURSE tnk_share_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/specs/* ${PROJECT_SOURCE_DIR}/kernel/*)
set(tnk_build_share ${PROJECT_BINARY_DIR}/share/tnk)
add_custom_command(OUTPUT ${tnk_build_share}/.copied
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${tnk_build_share}/specs ${tnk_build_share}/kernel
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${PROJECT_SOURCE_DIR}/specs ${tnk_build_share}/specs
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${PROJECT_SOURCE_DIR}/kernel ${tnk_build_share}/kernel
  COMMAND ${CMAKE_COMMAND} -E touch ${tnk_build_share}/.copied
  DEPENDS ${tnk_share_sources}
  VERBATIM)
add_custom_target(tnk_share DEPENDS ${tnk_build_share}/.copied)
add_dependencies(tnk tnk_share)  # a build of the target tnk alone (TNK_BUILD_TARGETS) gets them too

# The manual page and the completion scripts come from the command tree of the tnk just built, so they
# cannot miss a flag. A sanitizer build's tnk would also report its own leaks here: those trees skip it.
if(NOT TNK_SANITIZE)
  set(generated ${PROJECT_BINARY_DIR}/generated)
  add_custom_command(OUTPUT ${generated}/tnk.1 ${generated}/tnk.bash ${generated}/_tnk ${generated}/tnk.fish
    COMMAND ${CMAKE_COMMAND} -E make_directory ${generated}
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/generate_docs.sh $<TARGET_FILE:tnk> ${generated}
    DEPENDS tnk ${PROJECT_SOURCE_DIR}/cmake/generate_docs.sh
    VERBATIM
    COMMENT "Writing the manual page and the completion scripts from the command tree")
  add_custom_target(tnk_generated_docs ALL DEPENDS ${generated}/tnk.1)
  install(FILES ${generated}/tnk.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${generated}/tnk.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME tnk)
  # Debian's zsh looks in /usr/share/zsh/vendor-completions and /usr/local/share/zsh/site-functions. The
  # prefix is the one installed to (`cmake --install --prefix`, the package's /usr), not the configured one:
  # one tree serves the tests' installs and the package (scripts/test.sh).
  install(CODE "
    set(tnk_zsh_dir site-functions)
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(tnk_zsh_dir vendor-completions)
    endif()
    file(INSTALL \"${generated}/_tnk\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/zsh/\${tnk_zsh_dir}\")")
  install(FILES ${generated}/tnk.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
endif()

install(TARGETS tnk RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET tnk-agent)
  install(TARGETS tnk-agent RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tnk)
endif()
if(TARGET tnk-disk)
  install(TARGETS tnk-disk RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tnk)
endif()
install(DIRECTORY specs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tnk/specs)
install(DIRECTORY kernel/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tnk/kernel)
install(FILES README.md SECURITY.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} PATTERN design EXCLUDE)
include(cmake/Package.cmake)
