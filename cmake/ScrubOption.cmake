# vgpu_scrub_decision(<out-var> <value> <toolkit-found>): whether scrub/ builds vgpu-scrub, from the
# VGPU_SCRUB cache value (ON, OFF or AUTO) and whether a CUDA toolkit was found. Sets <out-var> to
# BUILD or SKIP, or stops the configure. Apart from scrub/CMakeLists.txt's toolkit search so that
# cmake/test/scrub_option_test.cmake can run every case in a child `cmake -P` without a toolkit.
#
# ON is the default because a partition's "scrub" defaults to "required" and a node without
# vgpu-scrub then quarantines every instance its jobs release (docs/scrub.md): a site build without
# CUDA must be refused at configure time, not found out on the first released instance.
include_guard(GLOBAL)

function(vgpu_scrub_decision out value toolkit_found)
  string(TOUPPER "${value}" mode)
  if(NOT mode MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "VGPU_SCRUB='${value}': expected ON (build vgpu-scrub, fail without a CUDA toolkit), "
                        "OFF (never build it) or AUTO (build it when a CUDA toolkit is found) "
                        "(docs/build-options.md)")
  endif()
  if(mode STREQUAL "OFF")
    message(STATUS "vgpu-scrub: not built (VGPU_SCRUB=OFF); partitions of nodes from this build must set "
                   "\"scrub\": \"optional\" (docs/scrub.md)")
    set(${out} SKIP PARENT_SCOPE)
  elseif(toolkit_found)
    set(${out} BUILD PARENT_SCOPE)
  elseif(mode STREQUAL "AUTO")
    message(WARNING "vgpu-scrub: no CUDA toolkit (nvcc not on PATH nor at /usr/local/cuda/bin/nvcc): skipping "
                    "vgpu-scrub and the scrub_on_gpu test (VGPU_SCRUB=AUTO). Nodes built from this tree cannot "
                    "scrub: a partition with \"scrub\": \"required\" (the default) quarantines every instance "
                    "its jobs release (docs/scrub.md)")
    set(${out} SKIP PARENT_SCOPE)
  else()
    message(FATAL_ERROR "vgpu-scrub: VGPU_SCRUB=ON but no CUDA toolkit was found (nvcc not on PATH nor at "
                        "/usr/local/cuda/bin/nvcc). Without vgpu-scrub a node quarantines every instance its "
                        "jobs release from a partition whose \"scrub\" is \"required\", the default "
                        "(docs/scrub.md). Either install the CUDA toolkit (nvcc), or configure with "
                        "-DVGPU_SCRUB=OFF and set \"scrub\": \"optional\" for every partition of the nodes "
                        "this build serves (docs/build-options.md).")
  endif()
endfunction()
