# ASan+UBSan for everything in the tree when VGPU_SANITIZE is on. The test command builds this way.
# UBSan is made fatal so a report fails the test instead of scrolling past.
# VGPU_TSAN builds with ThreadSanitizer instead (scripts/test-tsan.sh: only the concurrent
# components' tests); TSan and ASan cannot share one binary.
option(VGPU_TSAN "Build with ThreadSanitizer (not together with VGPU_SANITIZE)" OFF)
if(VGPU_SANITIZE AND VGPU_TSAN)
  message(FATAL_ERROR "VGPU_SANITIZE (ASan+UBSan) and VGPU_TSAN cannot be combined")
endif()
# -O1 -g1 (after the build type's flags, so they win): ASan's recommended level, with line tables
# for its stack traces. On the 2-core test machine it compiles the tree about 2.5 times faster
# than -O2 -g (71 s -> 29 s for node_flows_test.cpp), which is most of the test command's time.
if(VGPU_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
if(VGPU_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=thread)
endif()
