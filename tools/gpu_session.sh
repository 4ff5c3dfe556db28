#!/usr/bin/env bash
# One call on the GPU machine (device time is scarce): the GPU tests, Triton's tutorials on the
# GPU, the benchmarks (memory-bound kernels, tensor cores, debug mode's cost), Triton's test_core.py,
# the differential fuzzer and the notebooks' recorded data, each under its own time limit (0 skips a
# step), logs and JSON under $OUT. A command may run 600 s: lower the limits to fit (two calls).
#
# Triton's tutorials are not in this repository. To run them, copy python/tutorials/0[1-6]-*.py
# into an ignored folder (e.g. `.tutorials/`, listed in .git/info/exclude), name it in the device
# call's `carry`, and point TRITON_TUTORIALS_DIR at it (default .tutorials); else the step skips.
set -u
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TILEWORKBENCH_CACHE_DIR=/tmp/twcache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if [ "${TEST_LIMIT:-170}" != 0 ]; then
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$OUT/gpu_tests.log"
  timeout "${TEST_LIMIT:-170}" python3 -m pytest -q -m gpu -p no:cacheprovider --no-header -rfE tests \
    --ignore=tests/workbench/test_browser.py --ignore=tests/tutorials --ignore=tests/frontend \
    --ignore=tests/interpreter 2>&1 | grep -v "excepthook\|Original exception\|^$" | tail -n 60 >> "$OUT/gpu_tests.log"
  tail -n 25 "$OUT/gpu_tests.log"
fi
TUTORIALS=${TRITON_TUTORIALS_DIR:-.tutorials}
if [ "${TUTORIAL_LIMIT:-200}" != 0 ]; then
  if ls "$TUTORIALS"/0[1-6]-*.py > /dev/null 2>&1; then
    # each tutorial's wrappers on CUDA tensors against torch, and tutorial 06's forward at several
    # block sizes, causal and not (tests/tutorials, marked gpu); -rA lists every outcome
    # (TUTORIAL_AUTOTUNE_CONFIGS=n: each autotuned kernel compiles and times only its n smallest)
    TUTORIAL_AUTOTUNE_CONFIGS=${TUTORIAL_AUTOTUNE_CONFIGS:-2} TRITON_TUTORIALS_DIR=$(cd "$TUTORIALS" && pwd) \
      timeout "${TUTORIAL_LIMIT:-200}" \
      python3 -m pytest -q -m gpu -p no:cacheprovider --no-header -rA --durations=8 tests/tutorials \
      2>&1 | tail -n 80 > "$OUT/tutorials_gpu.log"
  else
    echo "tutorials: skipped, no 0[1-6]-*.py in $TUTORIALS (set TRITON_TUTORIALS_DIR, carry it)" \
      > "$OUT/tutorials_gpu.log"
  fi
  tail -n 40 "$OUT/tutorials_gpu.log"
fi
if [ "${BENCH_LIMIT:-230}" != 0 ]; then
  timeout "${BENCH_LIMIT:-230}" python3 bench/run.py --out "$OUT/bench.json" 2>&1 | tail -n 80 > "$OUT/bench.log"
  tail -n 45 "$OUT/bench.log"
fi
if [ "${TC_LIMIT:-230}" != 0 ]; then
  # tensor-core matmul and attention beside Triton and cuBLAS / SDPA (TC_ARGS="--quick" for fewer shapes)
  timeout "${TC_LIMIT:-230}" python3 bench/tensor_cores.py ${TC_ARGS:-} --out "$OUT/tensor_cores.json" 2>&1 \
    | tail -n 30 > "$OUT/tensor_cores.log"
  tail -n 14 "$OUT/tensor_cores.log"
fi
if [ "${DEBUG_COST_LIMIT:-0}" != 0 ]; then  # debug mode's cost (bounds checks) on the add and softmax
  timeout "$DEBUG_COST_LIMIT" python3 bench/debug_cost.py --out "$OUT/debug_cost.json" 2>&1 | tail -n 20 > "$OUT/debug_cost.log"
  tail -n 12 "$OUT/debug_cost.log"
fi
if [ "${TEST_CORE_LIMIT:-0}" != 0 ]; then
  # Triton's test_core.py, unmodified, compiled on the GPU (TRITON_TEST_CORE: its path, carried like the
  # tutorials; never committed); counts per function and what fails
  timeout "$TEST_CORE_LIMIT" python3 tools/run_test_core.py "${TRITON_TEST_CORE:-.triton_tests/test_core.py}" \
    --mode gpu --jobs "${TEST_CORE_JOBS:-8}" --max-cases "${TEST_CORE_CASES:-10}" --json "$OUT/test_core_gpu.json" \
    --compare bench/results/cpu-test-core-triton-interpreter.json > "$OUT/test_core_gpu.log" 2>&1
  tail -n 15 "$OUT/test_core_gpu.log"
fi
if [ "${FUZZ_LIMIT:-0}" != 0 ]; then
  # the differential fuzzer, longer than CI's, the GPU among the targets: each of its two GPU tests
  # draws examples for about 2/5 of FUZZ_LIMIT (FUZZ_SECONDS), another sample each FUZZ_SEED (in the
  # JSON); $OUT/fuzz.json: examples per test and target, every disagreement with program and inputs
  FUZZ_SUMMARY="$OUT/fuzz.json" FUZZ_EXAMPLES=${FUZZ_EXAMPLES:-5000} \
    FUZZ_SEED=${FUZZ_SEED:-$(date +%j%H%M)} FUZZ_SECONDS=${FUZZ_SECONDS:-$((FUZZ_LIMIT * 2 / 5))} \
    timeout -s INT -k 20 "$FUZZ_LIMIT" python3 -m pytest -q -p no:cacheprovider --no-header -rfE --tb=short -m gpu tests/differential \
    > "$OUT/fuzz.log" 2>&1
  tail -n 12 "$OUT/fuzz.log"
fi
if [ "${SHADOW_LIMIT:-240}" != 0 ]; then
  # every kernel of the language suite on the GPU: the `target` fixture's "cuda" parameter (NumPy arrays
  # staged through the GPU), each test's float64 reference judging the GPU's results; a lost CUDA
  # context, a hang or a crash resumes in a new process. $OUT/gpu_language_suite.json: passed,
  # failed, skipped per file, the failures' first lines, the restarts; .log: pytest's output, then
  # that table
  timeout -k 20 "$((SHADOW_LIMIT + 30))" python3 tools/gpu_language_suite.py \
    --budget "$SHADOW_LIMIT" --out "$OUT/gpu_language_suite.json" > /dev/null 2>&1
  tail -n 30 "$OUT/gpu_language_suite.log"
fi
if [ "${PROFILE_LIMIT:-0}" != 0 ]; then
  # SASS, registers and interleaved timings of the shapes where we trail Triton, then ncu on one launch each
  # (at most 8 files come back from $OUT: the profile travels as one archive)
  P=/tmp/profile
  mkdir -p $P
  C=${PROFILE_CASES:-layer_norm_4096x8192,layer_norm_4096x4096,softmax_fp16_4096x1024}
  timeout "$PROFILE_LIMIT" python3 bench/profile_kernels.py --cases $C --out $P > $P/profile.log 2>&1
  tail -n 8 $P/profile.log
  timeout "$PROFILE_LIMIT" ncu --clock-control none -k regex:'layer_norm|softmax' --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    --section InstructionStats --section SchedulerStats \
    python3 bench/profile_kernels.py --once --cases $C --out $P > $P/ncu.txt 2>&1
  tail -n 3 $P/ncu.txt
  tar czf "$OUT/profile.tgz" -C /tmp profile
fi
if [ "${FRESH_LIMIT:-0}" != 0 ]; then
  # cold first-call autotunes in fresh processes, sequential beside forked and forkserver workers
  # (issue 24; FRESH_ONLY: a regular expression of the workloads, e.g. "d64|sweep")
  timeout "$FRESH_LIMIT" python3 bench/autotune_fresh.py --rounds "${FRESH_ROUNDS:-1}" \
    --only "${FRESH_ONLY:-.}" --out "$OUT/autotune_fresh.json" > "$OUT/autotune_fresh.log" 2>&1
  grep "first call" "$OUT/autotune_fresh.log" | tail -n 12
fi
if [ "${ATTN_LIMIT:-0}" != 0 ]; then
  # Triton's tutorial-06 attention, its own source, compiled by each, forward and backward, paired
  # (ATTN_ARGS: e.g. "--fp8", "--tuned", "--head-dims 256"; TILEWORKBENCH_TMA=0 for the pointer path)
  timeout "$ATTN_LIMIT" python3 bench/tutorial_attention.py ${ATTN_ARGS:-} --out "$OUT/tutorial_attention.json" \
    > "$OUT/tutorial_attention.log" 2>&1
  tail -n 10 "$OUT/tutorial_attention.log"
fi
if [ "${NB_LIMIT:-60}" != 0 ] && [ -f bench/record_notebook_data.py ]; then
  timeout "${NB_LIMIT:-60}" python3 bench/record_notebook_data.py --out "$OUT/notebook_data.json" > "$OUT/nb.log" 2>&1
  tail -n 5 "$OUT/nb.log"
fi
ls -la "$OUT"
