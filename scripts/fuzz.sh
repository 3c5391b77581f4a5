#!/usr/bin/env bash
# libFuzzer runs over every input surface (docs/fuzzing.md).
#
#   scripts/fuzz.sh --short            build, replay fuzz/regressions + fuzz/corpus, then fuzz each
#                                      target for VGPU_FUZZ_SHORT_S seconds (default 8): the test
#                                      command's run (scripts/test.sh)
#   scripts/fuzz.sh --long SECONDS [TARGET...]
#                                      the documented longer run: SECONDS per target
#   scripts/fuzz.sh --replay           build and replay only (no new inputs)
#
# The build is its own clang tree (VGPU_FUZZ_BUILD_DIR, default build/fuzz): libFuzzer needs
# clang, and every library the fuzzers link is compiled with -fsanitize=fuzzer-no-link plus
# ASan+UBSan. New coverage-increasing inputs collect in <build>/fuzz-work/<target>/ (kept between
# runs, never committed); a crash input is written to <build>/fuzz-crashes/<target>/ and this
# script exits non-zero naming it. Every crash becomes a regression: copy the file into
# fuzz/regressions/<target>/, fix the bug, and the replay (ctest fuzz.<target>) keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  --short) seconds=${VGPU_FUZZ_SHORT_S:-8}; shift ;;
  --long)
    seconds=${2:-}
    [[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --long needs SECONDS per target" >&2; exit 2; }
    shift 2 ;;
  --replay) seconds=0; shift ;;
  *) echo "usage: scripts/fuzz.sh --short | --long SECONDS [TARGET...] | --replay" >&2; exit 2 ;;
esac

all_targets=(policy gres_request gres_contract ledger fakenvml_fixture viz_config viz_validate viz_session_record)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [ -d "fuzz/corpus/$t" ] || { echo "fuzz.sh: unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2; }
done

build=${VGPU_FUZZ_BUILD_DIR:-build/fuzz}
cc=${VGPU_FUZZ_CC:-clang-19}
cxx=${VGPU_FUZZ_CXX:-clang++-19}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (scripts/install-deps.sh installs clang-19)" >&2; exit 2; }

start=$SECONDS
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE= \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="-O1 -fsanitize=fuzzer-no-link" -DCMAKE_C_FLAGS="-O1" \
    -DVGPU_SANITIZE=ON -DVGPU_BUILD_FUZZERS=ON -DVGPU_BUILD_TESTS=OFF \
    -DVGPU_BUILD_BENCHMARKS=OFF -DVGPU_BUILD_SLURM_PLUGIN=OFF -DVGPU_SCRUB=AUTO >/dev/null
fi
cmake --build "$build" --target fuzzers -j "${VGPU_FUZZ_JOBS:-$(nproc)}"
echo "fuzz.sh: built in $((SECONDS - start)) s"

# libFuzzer does its own crash handling; leaks count as crashes.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
symbolizer=$(command -v llvm-symbolizer-19 || command -v llvm-symbolizer || true)
[ -z "$symbolizer" ] || export ASAN_SYMBOLIZER_PATH=$symbolizer UBSAN_SYMBOLIZER_PATH=$symbolizer

# Replay: every regression and every seed, executed once each (ctest fuzz.<target>).
ctest --test-dir "$build/fuzz" --output-on-failure
[ "$seconds" -gt 0 ] || exit 0

failed=()
printf '%-20s %10s %8s %8s %8s\n' target execs cov ft corpus
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t"
  crashes="$build/fuzz-crashes/$t"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  # The first directory receives new inputs; the committed corpus and regressions are only read.
  if ! "$build/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" \
      "$work" "fuzz/corpus/$t" "fuzz/regressions/$t" >"$log" 2>&1; then
    failed+=("$t")
    tail -n 60 "$log" >&2
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -n 1 | sed 's/Test unit written to //')
    echo "fuzz.sh: $t FAILED (full log: $log)" >&2
    if [ -n "$artifact" ]; then
      echo "fuzz.sh: crash input saved at $artifact" >&2
      echo "fuzz.sh: reproduce: $build/fuzz/${t}_fuzzer $artifact" >&2
      echo "fuzz.sh: once fixed, keep it forever: cp $artifact fuzz/regressions/$t/" >&2
    fi
    continue
  fi
  execs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$" || echo "?")
  last=$(grep -E "^#[0-9]+" "$log" | tail -n 1)
  cov=$(grep -o "cov: [0-9]*" <<<"$last" | grep -o "[0-9]*" || echo "?")
  ft=$(grep -o "ft: [0-9]*" <<<"$last" | grep -o "[0-9]*" || echo "?")
  corp=$(grep -o "corp: [0-9]*" <<<"$last" | grep -o "[0-9]*" || echo "?")
  printf '%-20s %10s %8s %8s %8s\n' "$t" "$execs" "$cov" "$ft" "$corp"
done
echo "fuzz.sh: ${#targets[@]} targets x ${seconds} s, total $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
