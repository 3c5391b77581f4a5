# ASan+UBSan for everything in the tree when VGPU_SANITIZE is on. The test command builds this way.
# UBSan is made fatal so a report fails the test instead of scrolling past.
# VGPU_TSAN builds with ThreadSanitizer instead (scripts/test-tsan.sh: only the concurrent
# components' tests); TSan and ASan cannot share one binary.
option(VGPU_TSAN "Build with ThreadSanitizer (not together with VGPU_SANITIZE)" OFF)
if(VGPU_SANITIZE AND VGPU_TSAN)
  message(FATAL_ERROR "VGPU_SANITIZE (ASan+UBSan) and VGPU_TSAN cannot be combined")
endif()
if(VGPU_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
if(VGPU_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=thread)
endif()
