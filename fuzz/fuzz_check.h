// Property checks for the fuzzers: a violated property must stop libFuzzer exactly as a crash
// does, so the input is saved and can become a regression. __builtin_trap() is not affected by
// NDEBUG and cannot be caught.
#pragma once

#include <cstdio>

#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz property violated: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                        \
    }                                                                                          \
  } while (0)
