# Cluster integration tests: a real slurmctld + three slurmd on this host running the built
# gres_vgpu.so. Included from gres_plugin/CMakeLists.txt (they need the plugin target); include
# it from anywhere else too, the guard keeps the tests single.
include_guard(GLOBAL)
if(NOT TARGET gres_vgpu)  # built without the plugin (VGPU_BUILD_SLURM_PLUGIN=OFF): nothing to test
  return()
endif()

set(vgpu_cluster_dir ${CMAKE_CURRENT_LIST_DIR})
file(GLOB vgpu_cluster_scenarios CONFIGURE_DEPENDS ${vgpu_cluster_dir}/scenarios/*.sh)

# vgpu_add_cluster_test(<test name> <script> <plugin dir> [<Slurm prefix>] [TIMEOUT s] [ENV k=v...])
# One scenario against one Slurm release: Debian's (no prefix) or one built by
# scripts/build-slurm.sh (its prefix). Used for the cluster.* and e2e.* suites alike.
function(vgpu_add_cluster_test name script plugin_dir prefix)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 240)
  endif()
  set(env "VC_PLUGIN_DIR=${plugin_dir}" ${T_ENV})
  if(prefix)
    list(APPEND env "VC_SLURM_PREFIX=${prefix}")
  endif()
  add_test(NAME ${name} COMMAND bash ${script})
  set_tests_properties(${name} PROPERTIES
    LABELS "${T_LABELS}"
    # A lane of its own (cmake/Testing.cmake): its daemons share the host's two cores. Before the
    # unit tests where ctest has no timings yet (a fresh build), longest-limited first: unit tests
    # then fill the cores beside the clusters instead of running before them.
    RESOURCE_GROUPS ${vgpu_one_lane} COST ${T_TIMEOUT}
    TIMEOUT ${T_TIMEOUT}
    FAIL_REGULAR_EXPRESSION "FAIL:"
    ENVIRONMENT "${env}")
endfunction()

foreach(scenario ${vgpu_cluster_scenarios})
  get_filename_component(name ${scenario} NAME_WE)
  vgpu_add_cluster_test(cluster.${name} ${scenario} $<TARGET_FILE_DIR:gres_vgpu> "" LABELS cluster)
  # The same scenarios against every further release built in this tree (gres_plugin/CMakeLists.txt).
  foreach(entry ${VGPU_EXTRA_SLURM_RELEASES})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 version)
    list(GET parts 1 prefix)
    list(GET parts 2 plugin_dir)
    string(REGEX REPLACE "^([0-9]+\\.[0-9]+)\\..*" "\\1" release "${version}")
    vgpu_add_cluster_test(slurm-${release}.cluster.${name} ${scenario} ${plugin_dir} ${prefix}
      LABELS "cluster;slurm-${release}")
  endforeach()
endforeach()
