# ASan+UBSan for everything in the tree when VGPU_SANITIZE is on. The test command builds this way.
# UBSan is made fatal so a report fails the test instead of scrolling past.
if(VGPU_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
