# ASan+UBSan for everything in the tree when VGPU_SANITIZE is on. The test command builds this way.
# UBSan is made fatal so a report fails the test instead of scrolling past.
# VGPU_TSAN builds with ThreadSanitizer instead (scripts/test-tsan.sh: only the concurrent
# components' tests); TSan and ASan cannot share one binary.
option(VGPU_TSAN "Build with ThreadSanitizer (not together with VGPU_SANITIZE)" OFF)
if(VGPU_SANITIZE AND VGPU_TSAN)
  message(FATAL_ERROR "VGPU_SANITIZE (ASan+UBSan) and VGPU_TSAN cannot be combined")
endif()
# -O0 -g1 (after the build type's flags, so they win): unoptimised code finds the same ASan/UBSan
# errors (nothing is optimised away), and line tables are enough for the stack traces. Compiling is
# most of the test command's time on the 2-core test machine; -O0 halves it against -O1
# (the node flows' tests, then one 1,500-line file: 51 s -> 26 s; -O2 -g took 71 s), and the tests' run time is dominated by
# the Slurm daemons, not by our code's speed.
if(VGPU_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O0 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
if(VGPU_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=thread)
endif()
