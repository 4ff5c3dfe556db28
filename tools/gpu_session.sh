#!/usr/bin/env bash
# One call on the GPU machine (device time is scarce): the GPU tests, the benchmark and the notebooks'
# recorded data, each under its own time limit, logs and JSON under $OUT.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 TILEWORKBENCH_CACHE_DIR=/tmp/twcache
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$OUT/gpu_tests.log"
timeout "${TEST_LIMIT:-170}" python3 -m pytest -q -m gpu -p no:cacheprovider --no-header -rfE tests \
  --ignore=tests/workbench/test_browser.py --ignore=tests/frontend --ignore=tests/interpreter 2>&1 | tail -n 60 >> "$OUT/gpu_tests.log"
tail -n 25 "$OUT/gpu_tests.log"
timeout "${BENCH_LIMIT:-230}" python3 bench/run.py --out "$OUT/bench.json" 2>&1 | tail -n 80 > "$OUT/bench.log"
tail -n 45 "$OUT/bench.log"
if [ "${SHADOW_LIMIT:-150}" != 0 ]; then
  # every kernel of the language suite on the GPU: the `target` fixture's "cuda" parameter (NumPy arrays
  # staged through the GPU), each test's float64 reference judging the GPU's results
  timeout "${SHADOW_LIMIT:-150}" python3 -m pytest -q -k cuda -p no:cacheprovider --no-header -rfE \
    tests/kernels tests/frontend tests/interpreter 2>&1 | tail -n 40 > "$OUT/gpu_language_suite.log"
  tail -n 12 "$OUT/gpu_language_suite.log"
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
if [ "${NB_LIMIT:-60}" != 0 ] && [ -f bench/record_notebook_data.py ]; then
  timeout "${NB_LIMIT:-60}" python3 bench/record_notebook_data.py --out "$OUT/notebook_data.json" > "$OUT/nb.log" 2>&1
  tail -n 5 "$OUT/nb.log"
fi
ls -la "$OUT"
