# vgpu_component(<name> [EXCLUDE <file>...]): a library of the folder's *.cpp (less EXCLUDE) whose
# public headers are its own include/vgpu/<name>/, so a header's path says which library owns it
# and a target sees only the headers of the libraries it links (base/ and libvgpu/).
function(vgpu_component name)
  cmake_parse_arguments(C "" "" "EXCLUDE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(excluded ${C_EXCLUDE})
    list(REMOVE_ITEM srcs ${CMAKE_CURRENT_SOURCE_DIR}/${excluded})
  endforeach()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  vgpu_set_warnings(${name})
endfunction()

# vgpu_plugin_objects(<name> SOURCES <file>... [INCLUDES <dir>...] [LINKS <target>...]): a
# library's sources compiled again for gres_vgpu.so, which Slurm's daemons dlopen: without the
# tree's sanitizer flags (their runtimes cannot be loaded into a daemon that way), optimised, with
# hidden symbols (gres_plugin/slurm/exports.map keeps only Slurm's). The library that owns the
# sources declares it; the plugin links the objects (gres_plugin/CMakeLists.txt). Only with
# VGPU_BUILD_SLURM_PLUGIN.
function(vgpu_plugin_objects name)
  if(NOT VGPU_BUILD_SLURM_PLUGIN)
    return()
  endif()
  cmake_parse_arguments(P "" "" "SOURCES;INCLUDES;LINKS" ${ARGN})
  add_library(${name} OBJECT ${P_SOURCES})
  set_property(TARGET ${name} PROPERTY COMPILE_OPTIONS "")
  target_include_directories(${name} PRIVATE ${P_INCLUDES})
  target_link_libraries(${name} PRIVATE ${P_LINKS})
  target_compile_options(${name} PRIVATE -O2 -fvisibility=hidden)
  vgpu_set_warnings(${name})
endfunction()
