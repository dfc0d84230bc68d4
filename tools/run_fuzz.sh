#!/usr/bin/env bash
# Bounded libFuzzer run of the three harnesses under tests/fuzz (clang, ASan + UBSan):
#   fuzz_model_image  the model-image reader (mt_model_check / _tensor / _io, mt_plan)
#   fuzz_session      plan query + session init + train/accumulate/eval/infer/checkpoint/export
#   fuzz_checkpoint   the checkpoint reader (mt_checkpoint_load into a fixed small model), raw
#                     bytes and value edits of valid checkpoints, then a step in each mode
# Every regression input under tests/fuzz/regressions/<harness>/ is replayed first, then each
# harness fuzzes for the budget from the seed corpus tests/fuzz/corpus/<kind>/. Exit status is
# non-zero if any harness crashes or reports; the reproducer is left in build/fuzz/artifacts/.
# The harnesses run side by side and their objects compile on every core.
#
# Usage:
#   tools/run_fuzz.sh [seconds_per_harness]     default 60 (what the test command runs)
#   tools/run_fuzz.sh --regen-corpus            rewrite gen_corpus's seeds in tests/fuzz/corpus
# Longer run (before a release, or after touching a reader), e.g. an hour of a core per
# harness, keeping what it learns in build/fuzz/work between runs:
#   tools/run_fuzz.sh 3600
# A crash found becomes a regression: copy the artifact to tests/fuzz/regressions/<harness>/
# and add a C test under tests/core that reproduces it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

regen=0
budget=60
case "${1:-}" in
  --regen-corpus) regen=1 ;;
  "") ;;
  *[!0-9]*) echo "usage: $0 [seconds_per_harness] | --regen-corpus" >&2; exit 2 ;;
  *) budget="$1" ;;
esac

# clang and its sanitizer/libFuzzer runtime (Debian: clang + libclang-rt-<major>-dev).
if ! command -v clang >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clang
fi
major="$(clang -dumpversion | cut -d. -f1)"
if ! ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 &&
   ! ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "libclang-rt-${major}-dev"
fi

out="$root/build/fuzz"
mkdir -p "$out/obj" "$out/artifacts" "$out/work"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
common="-g -O1 -ffp-contract=off -Wall -Wextra -Imicro_core/include -Imicro_core/src -Itests/core -Itests/fuzz"

# The core as C99 (as shipped), instrumented for coverage; tests' helpers beside it.
# Objects compile on every core (a fresh build is ~100 files under ASan + UBSan).
cores="$(nproc 2>/dev/null || echo 1)"
objs=()
compile_failed=0
for src in micro_core/src/*.c micro_core/src/*/*.c micro_core/src/ops/*/*.c tests/core/image_builder.c tests/fuzz/fuzz_models.c; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  std=-std=c99
  [[ "$src" == tests/* ]] && std=-std=c11
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$0" -nt "$obj" ] ||
     [ -n "$(find micro_core/include micro_core/src tests/core/image_builder.h tests/fuzz -name '*.h' -newer "$obj" 2>/dev/null)" ]; then
    while (($(jobs -rp | wc -l) >= cores)); do wait -n || compile_failed=1; done
    # shellcheck disable=SC2086
    { clang $std $common $san -fsanitize=fuzzer-no-link -c "$src" -o "$obj.tmp" && mv "$obj.tmp" "$obj"; } &
  fi
  objs+=("$obj")
done
while (($(jobs -rp | wc -l))); do wait -n || compile_failed=1; done
((compile_failed == 0)) || { echo "run_fuzz: a source did not compile" >&2; exit 1; }

if ((regen)); then
  # shellcheck disable=SC2086
  clang -std=c11 $common $san tests/fuzz/gen_corpus.c "${objs[@]}" -lm -o "$out/gen_corpus"
  # overwrites the seeds it makes and keeps the others (int8_digits_head.mtm: the Python
  # converter's int8 digits model, committed by hand)
  "$out/gen_corpus" tests/fuzz/corpus
  exit 0
fi

declare -A corpus_of=([fuzz_model_image]=model_image [fuzz_session]=session [fuzz_checkpoint]=checkpoint)
failed=()
for h in fuzz_model_image fuzz_session fuzz_checkpoint; do
  # shellcheck disable=SC2086
  clang -std=c11 $common $san -fsanitize=fuzzer "tests/fuzz/$h.c" "${objs[@]}" -lm -o "$out/$h"
done

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
harnesses=(fuzz_model_image fuzz_session fuzz_checkpoint)
# The harnesses fuzz side by side. Each is owed `budget` seconds of one core: with fewer cores
# than harnesses they share them, so each runs budget x harnesses / cores seconds of wall time
# (90 s on two cores for the default 60): the same executions as one after the other, in
# two thirds of the time there. (FUZZ_ARGS="-jobs=J" starts J processes for each harness.)
wall=$(( cores >= ${#harnesses[@]} ? budget : (budget * ${#harnesses[@]} + cores - 1) / cores ))
for h in "${harnesses[@]}"; do
  seeds="tests/fuzz/corpus/${corpus_of[$h]}"
  regressions="tests/fuzz/regressions/$h"
  # 1. replay: every seed and every past crash must now pass
  mapfile -t replay < <(find "$seeds" "$regressions" -type f ! -name '*.md' 2>/dev/null | sort)
  if ((${#replay[@]})) && ! "$out/$h" -runs=1 "${replay[@]}" >"$out/$h.replay.log" 2>&1; then
    echo "FAIL $h: a seed or regression input crashes (log: $out/$h.replay.log)"
    tail -n 30 "$out/$h.replay.log"
    failed+=("$h")
  fi
done
# 2. fuzz for the budget; new inputs go to the work corpus, seeds stay as committed
declare -A pid_of=()
for h in "${harnesses[@]}"; do
  [[ " ${failed[*]} " == *" $h "* ]] && continue
  mkdir -p "$out/work/$h"
  # shellcheck disable=SC2086
  "$out/$h" "$out/work/$h" "tests/fuzz/corpus/${corpus_of[$h]}" -max_total_time="$wall" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -artifact_prefix="$out/artifacts/$h-" -print_final_stats=1 ${FUZZ_ARGS:-} \
    >"$out/$h.log" 2>&1 &
  pid_of[$h]=$!
done
for h in "${harnesses[@]}"; do
  [ -n "${pid_of[$h]:-}" ] || continue
  if wait "${pid_of[$h]}"; then
    echo "ok   $h: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$out/$h.log" | grep -o '[0-9]*$') runs in ${wall}s beside the others, no crash"
  else
    echo "FAIL $h (log: $out/$h.log; reproducer: $(ls -t "$out/artifacts/$h-"* 2>/dev/null | head -n1))"
    grep -m1 -A25 'ERROR:\|runtime error' "$out/$h.log" || tail -n 30 "$out/$h.log"
    failed+=("$h")
  fi
done

if ((${#failed[@]})); then
  echo "run_fuzz: ${#failed[@]} harness(es) failed: ${failed[*]}"
  exit 1
fi
echo "run_fuzz: ${#harnesses[@]} harnesses, ${budget} s of a core each (${wall} s side by side on ${cores}), no crash"
