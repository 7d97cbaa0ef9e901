# One warnings list for every target. Warnings are errors in the developers' and CI's builds
# (TNK_WERROR, which scripts/build.sh turns on), never in users' and packagers' builds: another
# compiler's new warning must not fail a correct build of a release.
# GCC 12's -Warray-bounds, -Wrestrict and -Wstringop-overflow misfire on std::string concatenation once
# it is inlined at -O2 and -O3 (GCC bugs 105329 and 105651, fixed in 13): they stay warnings there, never
# errors, so that a change of inlining (a precompiled header, another build type) cannot fail a correct
# build.
function(tnk_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wformat=2)
  if(TNK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TNK_WERROR AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-error=array-bounds -Wno-error=restrict
      -Wno-error=stringop-overflow)
  endif()
endfunction()
