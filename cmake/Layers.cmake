# Layers are libraries (STYLE.md): each folder of src/ builds as its own static library that names the
# layers it uses, and the compiler enforces the arrows. A layer is compiled against an include view
# (build/layers/<name>/) holding links to its own folder and to the folders of the layers it uses,
# directly or through them, and nothing else; src/ itself is not on its include path. An #include
# that points up a layer, or sideways into a layer it did not declare, is "No such file or
# directory" at compile time. tests/layering/ shows it, and scripts/include_graph.py prints the graph.

set(TNK_LAYER_VIEWS ${PROJECT_BINARY_DIR}/layers)

# One precompiled header for every layer: nlohmann/json and the standard headers most files use
# are parsed once per tree instead of once per file (about a second each at -O2 -g).
option(TNK_PCH "Precompile the headers most files include" ON)
if(TNK_PCH)
  # file(CONFIGURE) writes only when the text changed: file(WRITE) gave the file a new time at every
  # configure, which recompiled the header (and a quick start's build) each time.
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/tnk_pch.cc
    CONTENT "// the translation unit that compiles the shared precompiled header\n")
  add_library(tnk_pch OBJECT ${PROJECT_BINARY_DIR}/tnk_pch.cc)
  target_link_libraries(tnk_pch PRIVATE nlohmann_json::nlohmann_json)
  tnk_set_warnings(tnk_pch)
  target_precompile_headers(tnk_pch PRIVATE <nlohmann/json.hpp> <filesystem> <functional> <map> <memory>
    <optional> <string> <string_view> <vector>)
endif()

# tnk_layer(<folder under src/> [DEPS <folder>...] [LIBS <library>...] [EXCLUDE <regex>...]
#           [PCH <header>...])
# Defines tnk_<folder with / as _>, from src/<folder>/*.cc (not recursive). DEPS must already be layers.
# PCH gives the layer a precompiled header of its own (for a heavy header only it uses).
function(tnk_layer folder)
  cmake_parse_arguments(L "" "" "DEPS;LIBS;EXCLUDE;PCH" ${ARGN})
  string(REPLACE "/" "_" name "tnk_${folder}")
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${folder}/*.cc)
  foreach(pattern IN LISTS L_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${pattern}")
  endforeach()

  # What the view shows: this folder and every folder below it in the graph.
  set(visible ${folder})
  set(dep_targets "")
  foreach(dep IN LISTS L_DEPS)
    get_property(dep_visible GLOBAL PROPERTY TNK_LAYER_VISIBLE_${dep})
    if(NOT DEFINED dep_visible OR dep_visible STREQUAL "")
      message(FATAL_ERROR "layer ${folder} uses ${dep}, which is not a layer (yet): define the layers bottom-up")
    endif()
    list(APPEND visible ${dep_visible})
    string(REPLACE "/" "_" dep_target "tnk_${dep}")
    list(APPEND dep_targets ${dep_target})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  list(SORT visible)  # a parent folder before its subfolders, so a linked parent covers them
  set_property(GLOBAL PROPERTY TNK_LAYER_VISIBLE_${folder} ${visible})

  set(view ${TNK_LAYER_VIEWS}/${name})
  file(REMOVE_RECURSE ${view})
  set(linked "")
  foreach(dir IN LISTS visible)
    set(covered FALSE)
    foreach(parent IN LISTS linked)
      string(FIND "${dir}/" "${parent}/" at)
      if(at EQUAL 0)
        set(covered TRUE)
      endif()
    endforeach()
    if(NOT covered)
      get_filename_component(parent_dir ${view}/${dir} DIRECTORY)
      file(MAKE_DIRECTORY ${parent_dir})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${dir} ${view}/${dir} SYMBOLIC)
      list(APPEND linked ${dir})
    endif()
  endforeach()

  if(sources)
    add_library(${name} STATIC ${sources})
    target_include_directories(${name} PRIVATE ${view})
    target_link_libraries(${name} PUBLIC ${dep_targets} ${L_LIBS})
    tnk_set_warnings(${name})
    if(TNK_PCH AND L_PCH)
      target_precompile_headers(${name} PRIVATE <nlohmann/json.hpp> ${L_PCH})
    elseif(TNK_PCH)
      target_precompile_headers(${name} REUSE_FROM tnk_pch)
    endif()
  else()  # a folder of headers only
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${dep_targets} ${L_LIBS})
  endif()
endfunction()
