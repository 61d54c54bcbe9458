#!/usr/bin/env bash
# ../shared/GPU.md's checklist in one call on a lent GPU machine: logs and reports under $OUT.
#   bash benchmarks/gpu_checklist.sh [stage ...]
#   stages: env kernels engine async suite whisper bart tune big sync fp8 big-sync big-fp8 variants variants64 syncs beams
#           encgraphs (the encoder's CUDA graphs on and off, each twice, alternating)
#           encattn (the encoder's attention kernels alone) densevspacked (the encoder's attention as
#           dense SDPA, cuDNN first, against packed varlen flash, each twice, alternating)
#           launch256 launch64 (after tune: its fastest launch, /tmp/best_launch.json, against the default)
#           overlap (the encoder and the decode on two streams at once: does one hide the other?)
#           new (only the tests of code no GPU has run yet, session 23 to 29: fp8 rows and products,
#           packed products, beam candidates, async scheduling, the encoder's stream; ~1 minute)
#           fp8rows (the fp8 row quantizer alone) parity (the parity tests, float32, the engine's defaults)
#           variants30 (session 30: the encoder's stream, now the GPU's default, and the fp8 encoder
#           with the chunked row quantizer)
#           int4 (kv_cache_dtype="int4", session 30: its kernel tests compiled, then its RTFx at batch 256
#           beside the default and the fp8 cache, each with the encoder's stream)
#           int4b (session 31: the 4-bit cache in each block's first half, not each vector's: its tests,
#           the decode's launch tuned for it, its RTFx at batch 256 with that launch and without)
#           int4c (session 31: the 4-bit decode with no int-to-float conversion, against the fp8 cache)
#           int4e (session 31, not yet run: the decode in two passes, LAUNCH's two_pass, for fp8 and
#           int4, and int4's scores in integers, dp4a, LAUNCH's int_scores: their tests compiled, each
#           tuned against the one-pass float-score kernel, the engine with the best of each cache)
#           states (session 32, rebuilt in session 33, both kinds in one stage since session 34, not yet run:
#           cross_cache="states", the encoder states cached once and read through each layer's K/V
#           projection, kernels/paged_states_*.py: its tests compiled, its kernel's launch tuned at batch
#           256 for float16 and fp8 states (6 launches a kind) against the paged decode of the projected
#           K/V, each launch's error against the torch form printed, then the engine's RTFx at batch 256:
#           the float16 default and the fp8 cache (fp8 encoder), each without and with states in its
#           kind's tuned launch, tokens compared; ~9 minutes at most)
#           beams (beam-4 summarization, Scriba against transformers' generate, both on the GPU)
# Session 30 (an H200) ran `env new variants`, then `fp8rows new variants30 parity`: the encoder's
# stream became the GPU's default; encoder and decode do not overlap on the device. Session 31 (an
# H200) ran `env int4 tune`, `int4b`, `int4c`, `int4d` (~13 minutes in all): int4 is as fast as fp8,
# not faster; both decode kernels are bound by their instructions, not by memory
# (benchmarks/results/gpu_h200_2026-11-28_session31.txt). Session 33 (no GPU) compiled every kernel
# for sm_90 on the CPU (benchmarks/compile_for_gpu.py, CI runs it): session 32's states kernel did
# not compile (and spilled, and read all of q in every warp); rebuilt. The next lent GPU: `env states` in one call (the
# states read: float16's cross bytes halved with no rounding, fp8's too); time left, int4e, then parity.
# Each stage has its own time limit, so one failure or hang leaves the others' results.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
stages=${*:-env kernels engine whisper bart}
run() {  # name, seconds, command...
  local name=$1 limit=$2; shift 2
  echo "=== $name (limit ${limit}s)"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0))s"; tail -n 25 "$OUT/$name.log"
}
for stage in $stages; do
  case $stage in
    env) run env 60 bash -c 'nvidia-smi; git rev-parse HEAD 2>/dev/null; python3 -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__, torch.cuda.get_device_name())"' ;;
    kernels) run kernels 200 python3 -m pytest -q -p no:cacheprovider tests/kernels tests/engine/test_gpu_path.py tests/models/test_fp8_linear.py tests/engine/test_beam_candidates.py ;;
    engine) SCRIBA_TEST_FLOAT32=1 run engine 300 python3 -m pytest -q -p no:cacheprovider tests/models/test_bart_parity.py tests/whisper/test_whisper_parity.py tests/engine/test_sampling.py tests/engine/test_beam_search.py ;;
    new) SCRIBA_TEST_FLOAT32=1 run new 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_fp8_rows.py tests/models/test_fp8_linear.py tests/models/test_packed_linear.py tests/engine/test_beam_candidates.py tests/engine/test_gpu_path.py tests/engine/test_async_scheduling.py tests/engine/test_encoder_stream.py -k "not off_on_the_cpu" ;;
    async) SCRIBA_TEST_FLOAT32=1 run async 240 python3 -m pytest -q -p no:cacheprovider tests/engine/test_async_scheduling.py tests/engine/test_encoder_stream.py tests/models/test_bart_parity.py tests/whisper/test_whisper_parity.py -k "not off_on_the_cpu" ;;
    variants) run variants 360 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async,async+encoder-stream,async+encoder-stream+decode-priority,fp8+encoder-stream,async+fp8-encoder,fp8+fp8-encoder+encoder-stream --profile-admission --out "$OUT/gpu_whisper_b256_variants.txt" ;;
    variants64) run variants64 200 python3 benchmarks/bench_gpu.py --models whisper --batch 64 --profile --variants async,sync,fp8 --out "$OUT/gpu_whisper_b64_variants.txt" ;;
    encgraphs) run encgraphs 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile-admission --variants async-eager-encoder,async,async-eager-encoder,async --out "$OUT/gpu_whisper_b256_encoder_graphs.txt" ;;
    encattn) run encattn 120 python3 benchmarks/bench_encoder_attention_gpu.py --out "$OUT/encoder_attention.txt" ;;
    densevspacked) run densevspacked 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile-admission --variants async-packed-encoder,async,async-packed-encoder,async --out "$OUT/gpu_whisper_b256_dense_encoder_attention.txt" ;;
    fp8rows) run fp8rows 60 python3 benchmarks/bench_fp8_rows_gpu.py ;;
    parity) SCRIBA_TEST_FLOAT32=1 run parity 150 python3 -m pytest -q -p no:cacheprovider tests/models/test_bart_parity.py tests/whisper/test_whisper_parity.py ;;
    variants30) run variants30 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async,async+encoder-stream,async+fp8-encoder+encoder-stream,fp8+fp8-encoder+encoder-stream --profile-admission --out "$OUT/gpu_whisper_b256_variants30.txt" ;;
    int4) SCRIBA_TEST_FLOAT32=1 run int4-tests 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kv8.py tests/engine/test_gpu_path.py::test_a_4bit_cache_through_the_triton_path_matches_the_torch_path
      run int4 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async+encoder-stream,int4+encoder-stream,int4+fp8-encoder+encoder-stream,fp8+fp8-encoder+encoder-stream --out "$OUT/gpu_whisper_b256_int4.txt" ;;
    int4b) SCRIBA_TEST_FLOAT32=1 run int4b-tests 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kv8.py tests/engine/test_gpu_path.py -k "4bit or 4_bit or kv8"
      run int4b-tune 200 python3 benchmarks/tune_paged_decode.py --best-kind int4 --best-out /tmp/best_launch.json
      run int4b 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async+encoder-stream,int4+fp8-encoder+encoder-stream,int4+fp8-encoder+encoder-stream+launch,fp8+fp8-encoder+encoder-stream --decode-launch /tmp/best_launch.json --out "$OUT/gpu_whisper_b256_int4b.txt" ;;
    int4c) SCRIBA_TEST_FLOAT32=1 run int4c-tests 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kv8.py -k "uint8 or 4bit"
      run int4c-tune 100 python3 benchmarks/tune_paged_decode.py --kinds fp8,int4 --best-kind int4 --best-out /tmp/best_launch.json
      run int4c 200 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants fp8+fp8-encoder+encoder-stream,int4+fp8-encoder+encoder-stream+launch --decode-launch /tmp/best_launch.json --out "$OUT/gpu_whisper_b256_int4c.txt" ;;
    int4e) SCRIBA_TEST_FLOAT32=1 run int4e-tests 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_kv8.py -k "uint8 or 4bit or two_passes"
      run int4e-tune 180 python3 benchmarks/tune_paged_decode.py --kinds fp8,int4 --best-out "/tmp/best_{kind}.json"
      run int4e 240 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants fp8+fp8-encoder+encoder-stream,fp8+fp8-encoder+encoder-stream+launch,int4+fp8-encoder+encoder-stream+launch --decode-launch "/tmp/best_{kind}.json" --out "$OUT/gpu_whisper_b256_int4e.txt" ;;
    states) SCRIBA_TEST_FLOAT32=1 run states-tests 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_paged_states_attention.py tests/engine/test_cross_states.py -k triton
      run states-tune 160 python3 benchmarks/tune_states_decode.py --kinds float16,fp8 --batches 256 --best-out "/tmp/best_states_{kind}.json"
      run states 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async+encoder-stream,async+encoder-stream+states,fp8+fp8-encoder+encoder-stream,fp8+fp8-encoder+encoder-stream+states --states-launch "/tmp/best_states_{kind}.json" --out "$OUT/gpu_whisper_b256_states.txt" ;;
    overlap) run overlap 240 python3 benchmarks/bench_overlap_gpu.py --carveouts 0,16,32,48 --out "$OUT/overlap.txt" ;;
    beams) run beams 240 python3 benchmarks/bench_beam.py --device cuda --dtype float16 --num-requests 128 --max-len 512 ;;
    syncs) run syncs 120 bash -c 'cd benchmarks && python3 find_gpu_syncs.py --batch 16 && python3 find_gpu_syncs.py --batch 16 --async-scheduling off' ;;
    suite) SCRIBA_TEST_FLOAT32=1 run suite 300 python3 -m pytest -q -p no:cacheprovider tests/engine tests/models -k "not off_on_the_cpu" ;;
    whisper) run whisper 300 python3 benchmarks/bench_gpu.py --models whisper --batch 64 --profile --out "$OUT/gpu_whisper_b64.txt" ;;
    bart) run bart 300 python3 benchmarks/bench_gpu.py --models bart --batch 64 --profile --out "$OUT/gpu_bart_b64.txt" ;;
    tune) run tune 300 python3 benchmarks/tune_paged_decode.py --best-out /tmp/best_launch.json ;;
    launch256) run launch256 330 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --variants async,async+launch,fp8,fp8+launch --decode-launch /tmp/best_launch.json --out "$OUT/gpu_whisper_b256_launch.txt" ;;
    launch64) run launch64 300 python3 benchmarks/bench_gpu.py --models whisper --batch 64 --profile --variants async,async+launch,sync --decode-launch /tmp/best_launch.json --out "$OUT/gpu_whisper_b64_launch.txt" ;;
    sync) run sync 300 python3 benchmarks/bench_gpu.py --models whisper --batch 64 --skip-transformers --profile --async-scheduling off --out "$OUT/gpu_whisper_b64_sync.txt" ;;
    fp8) run fp8 300 python3 benchmarks/bench_gpu.py --models whisper --batch 64 --skip-transformers --profile --kv-cache-dtype fp8 --out "$OUT/gpu_whisper_b64_fp8.txt" ;;
    big-sync) run big-sync 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --async-scheduling off --out "$OUT/gpu_whisper_b256_sync.txt" ;;
    big-fp8) run big-fp8 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --kv-cache-dtype fp8 --out "$OUT/gpu_whisper_b256_fp8.txt" ;;
    big) run big 300 python3 benchmarks/bench_gpu.py --models whisper --batch 256 --skip-transformers --profile --out "$OUT/gpu_whisper_b256.txt" ;;
  esac
done
