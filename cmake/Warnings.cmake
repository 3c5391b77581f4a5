# One place for warning flags so every target (library, tools, tests) is held to the same bar.
function(vgpu_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wnull-dereference)
  if(VGPU_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

function(vgpu_set_c_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow)
  if(VGPU_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
