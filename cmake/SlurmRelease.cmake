# Building gres_vgpu.so against one Slurm release: find the release's version, its config.h
# (configuring the tree when it has none), the version of the libslurmfull it will be linked with and
# of the slurmd installed beside that library, and refuse any mismatch. The plugin is only loaded
# when its plugin_version equals the daemon's major.minor.micro, so a mismatch is a configure error,
# not a silently count-only GRES at run time.
include_guard(GLOBAL)

# Version "X.Y.Z" from a tree's slurm/slurm_version.h (configured) or META (unconfigured tarball).
function(vgpu_slurm_tree_version out src config_dir)
  foreach(header ${config_dir}/slurm/slurm_version.h ${src}/slurm/slurm_version.h)
    if(EXISTS ${header})
      file(STRINGS ${header} line REGEX "^#define SLURM_VERSION_NUMBER 0x[0-9a-fA-F]+")
      if(line)
        string(REGEX REPLACE ".*0x([0-9a-fA-F]+).*" "\\1" hex "${line}")
        math(EXPR major "0x${hex} >> 16 & 255")
        math(EXPR minor "0x${hex} >> 8 & 255")
        math(EXPR micro "0x${hex} & 255")
        if(minor LESS 10)
          set(minor "0${minor}")
        endif()
        set(${out} "${major}.${minor}.${micro}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  if(EXISTS ${src}/META)
    file(STRINGS ${src}/META meta REGEX "^ *Version:")
    string(REGEX REPLACE ".*Version:[ \t]*" "" version "${meta}")
    set(${out} "${version}" PARENT_SCOPE)
    return()
  endif()
  message(FATAL_ERROR "slurm-vgpu: ${src} is not a Slurm source tree (no slurm/slurm_version.h, no META)")
endfunction()

# The directory holding the tree's config.h: the tree itself when it was configured in place, the
# Debian stub beside it (scripts/fetch-slurm-source.sh), or a configure run into the build tree.
function(vgpu_slurm_config_dir out src tag)
  if(EXISTS ${src}/config.h)
    set(${out} ${src} PARENT_SCOPE)
  elseif(EXISTS ${src}/../config/config.h)
    get_filename_component(dir ${src}/../config ABSOLUTE)
    set(${out} ${dir} PARENT_SCOPE)
  else()
    set(dir ${CMAKE_BINARY_DIR}/slurm-configured/${tag})
    if(NOT EXISTS ${dir}/config.h)
      message(STATUS "slurm-vgpu: ${src} has no config.h; configuring it in ${dir} (once)")
      file(MAKE_DIRECTORY ${dir})
      execute_process(COMMAND ${src}/configure --disable-static --without-rpath
        WORKING_DIRECTORY ${dir} OUTPUT_FILE ${dir}/configure.log ERROR_FILE ${dir}/configure.log
        RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "slurm-vgpu: configuring ${src} failed (rc ${rc}); see ${dir}/configure.log")
      endif()
    endif()
    set(${out} ${dir} PARENT_SCOPE)
  endif()
endfunction()

# Version "X.Y.Z" of a libslurmfull, asked from the library itself: print_slurm_version() prints
# "<package> X.Y.Z" in every release (slurm_api_version() is the API number, not the release).
function(vgpu_slurm_library_version out library)
  set(probe ${CMAKE_BINARY_DIR}/slurm-probe/release_version.c)
  file(WRITE ${probe} [=[
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
  void (*print)(void) = NULL;
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  *(void **) &print = dlsym(lib, "print_slurm_version");
  if (!print) *(void **) &print = dlsym(lib, "slurm_print_slurm_version");
  if (!print) { fprintf(stderr, "no print_slurm_version\n"); return 1; }
  print();
  return 0;
}
]=])
  unset(vgpu_probe_run_rc CACHE)
  unset(vgpu_probe_compiled CACHE)
  try_run(vgpu_probe_run_rc vgpu_probe_compiled ${CMAKE_BINARY_DIR}/slurm-probe ${probe}
    LINK_LIBRARIES ${CMAKE_DL_LIBS} COMPILE_OUTPUT_VARIABLE compile_out
    RUN_OUTPUT_VARIABLE text ARGS ${library})
  if(NOT vgpu_probe_compiled OR NOT vgpu_probe_run_rc EQUAL 0 OR NOT text MATCHES "([0-9]+\\.[0-9]+\\.[0-9]+)")
    message(FATAL_ERROR "slurm-vgpu: cannot ask ${library} for its release: ${text}${compile_out}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# Version of the slurmd installed with the library in `libdir`, or "" when none is found there.
function(vgpu_slurm_slurmd_version out libdir)
  set(${out} "" PARENT_SCOPE)
  foreach(up .. ../.. ../../..)
    get_filename_component(sbin ${libdir}/${up}/sbin ABSOLUTE)
    if(EXISTS ${sbin}/slurmd)
      execute_process(COMMAND ${sbin}/slurmd -V OUTPUT_VARIABLE text RESULT_VARIABLE rc
        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND text MATCHES "([0-9]+\\.[0-9]+\\.[0-9]+)")
        set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
        set(VGPU_SLURMD_FOUND ${sbin}/slurmd PARENT_SCOPE)
      endif()
      return()
    endif()
  endforeach()
endfunction()

# vgpu_add_gres_plugin(<target> SRC <tree> [LIBDIR <dir>] [OUTPUT_DIR <dir>] OBJECTS <cxx object lib>...)
# With LIBDIR: the loadable gres_vgpu.so for that release, linked against its libslurmfull, after
# the version checks above. Without: a compile-only check of the C layer against the release's
# headers (no library to link with). Sets <target>_VERSION in the caller.
function(vgpu_add_gres_plugin target)
  cmake_parse_arguments(P "" "SRC;LIBDIR;OUTPUT_DIR" "OBJECTS" ${ARGN})
  set(objects "")
  foreach(o ${P_OBJECTS})
    list(APPEND objects $<TARGET_OBJECTS:${o}>)
  endforeach()
  get_filename_component(src ${P_SRC} ABSOLUTE)
  vgpu_slurm_config_dir(config_dir ${src} ${target})
  vgpu_slurm_tree_version(src_version ${src} ${config_dir})
  foreach(required ${src}/src/common/slurm_xlator.h ${config_dir}/config.h)
    if(NOT EXISTS ${required})
      message(FATAL_ERROR "slurm-vgpu: ${required} missing: ${src} is not a usable Slurm ${src_version} tree")
    endif()
  endforeach()
  set(c_file ${PROJECT_SOURCE_DIR}/gres_plugin/slurm/gres_vgpu.c)
  if(P_LIBDIR)
    unset(${target}_LIBSLURMFULL CACHE)  # the release directory may have moved since the last configure
    find_library(${target}_LIBSLURMFULL slurmfull PATHS ${P_LIBDIR} ${P_LIBDIR}/slurm NO_DEFAULT_PATH NO_CACHE)
    if(NOT ${target}_LIBSLURMFULL)
      message(FATAL_ERROR "slurm-vgpu: no libslurmfull in ${P_LIBDIR} (VGPU_SLURM_LIBDIR: where that release's libslurmfull and plugins are installed)")
    endif()
    set(library ${${target}_LIBSLURMFULL})
    vgpu_slurm_library_version(lib_version ${library})
    if(NOT lib_version STREQUAL src_version)
      message(FATAL_ERROR "slurm-vgpu: Slurm source ${src} is ${src_version} but ${library} is ${lib_version}: "
                          "build against the source of the release that is installed (the plugin loads only when both agree)")
    endif()
    get_filename_component(libdir ${library} DIRECTORY)
    vgpu_slurm_slurmd_version(slurmd_version ${libdir})
    if(slurmd_version AND NOT slurmd_version STREQUAL src_version)
      message(FATAL_ERROR "slurm-vgpu: Slurm source ${src} is ${src_version} but the slurmd installed with "
                          "${library} (${VGPU_SLURMD_FOUND}) is ${slurmd_version}")
    endif()
    add_library(${target} MODULE ${c_file} ${objects})
    set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME gres_vgpu C_STANDARD 11
      COMPILE_OPTIONS "" LINK_OPTIONS "" LINKER_LANGUAGE CXX)
    if(P_OUTPUT_DIR)
      set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
    endif()
    # --no-undefined turns a missing Slurm symbol into a build error instead of a slurmd fatal().
    # The C++ runtime is linked in, hidden by the version script: slurmstepd loads the plugin for
    # every job step, and loading and relocating the shared libstdc++ (which no Slurm daemon
    # loads otherwise) doubled the cost of that load (docs/benchmarks.md, "Loading the plugin").
    target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,-rpath,${libdir}
      -Wl,--version-script=${PROJECT_SOURCE_DIR}/gres_plugin/slurm/exports.map
      -static-libstdc++ -static-libgcc)
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/gres_plugin/slurm/exports.map)
    target_link_libraries(${target} PRIVATE ${library})
    if(slurmd_version)
      set(slurmd_note "; slurmd ${slurmd_version} at ${VGPU_SLURMD_FOUND}")
    endif()
    message(STATUS "slurm-vgpu: ${target}: gres_vgpu.so for Slurm ${src_version} (${library}${slurmd_note})")
  else()
    add_library(${target} OBJECT ${c_file})
    set_target_properties(${target} PROPERTIES C_STANDARD 11 COMPILE_OPTIONS "")
    message(STATUS "slurm-vgpu: ${target}: compile check of the C layer against Slurm ${src_version} headers")
  endif()
  # Slurm's headers are not ours to make warning-free; SYSTEM keeps -Werror on our code only.
  target_include_directories(${target} SYSTEM PRIVATE ${config_dir} ${src})
  target_compile_options(${target} PRIVATE -O2)
  vgpu_set_c_warnings(${target})
  set(${target}_VERSION ${src_version} PARENT_SCOPE)
  if(P_LIBDIR)
    set(${target}_SLURMD "${VGPU_SLURMD_FOUND}" PARENT_SCOPE)
    set(${target}_PLUGIN_DIR "${libdir}" PARENT_SCOPE)  # where that release loads plugins from
  endif()
endfunction()
