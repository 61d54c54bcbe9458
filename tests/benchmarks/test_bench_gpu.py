"""benchmarks/bench_gpu.py stays runnable: a tiny-shape run on this machine, tokens checked."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import bench_gpu  # noqa: E402


def test_tiny_run_reports_both_models_with_identical_tokens(capsys, tmp_path):
    out = tmp_path / "report.txt"
    bench_gpu.LINES.clear()
    bench_gpu.main(["--tiny", "--device", "cpu", "--batch", "3", "--new-tokens", "6", "--out", str(out)])
    report = out.read_text()
    assert report.count("greedy tokens identical to transformers: 3/3 sequences") == 2
    assert "## tiny Whisper" in report and "## tiny BART" in report and report.count("x the floor") == 2
    assert "real-time factor" in report


def test_variants_run_on_the_same_weights_and_compare_tokens(tmp_path):
    out = tmp_path / "variants.txt"
    bench_gpu.LINES.clear()
    argv = ["--tiny", "--device", "cpu", "--batch", "3", "--new-tokens", "5", "--models", "whisper"]
    dense = bench_gpu.backends.CudaBackend.encoder_attention
    variants = "async,sync-packed-encoder,fp8+fp8-encoder,async+encoder-stream+decode-priority,async+states"
    bench_gpu.main([*argv, "--skip-transformers", "--profile", "--variants", variants, "--out", str(out)])
    report = out.read_text()
    assert "## tiny Whisper (async)" in report and "## tiny Whisper (fp8+fp8-encoder)" in report
    assert (
        "## tiny Whisper (sync-packed-encoder)" in report
        and "## tiny Whisper (async+encoder-stream+decode-priority)" in report
    )
    assert bench_gpu.backends.CudaBackend.encoder_attention == dense  # the variant's patch undone
    # scheduling changes no token; tiny random weights keep fp8's argmax too, and the states' read
    assert report.count("greedy tokens identical to (async): 3/3 sequences") == 4
    assert report.count("Scriba's steps (host time of each step() call): 1 admitting steps") == 4
    floors = [
        float(line.split("floor ")[1].split(" ms")[0])
        for line in report.splitlines()
        if "x the floor" in line
    ]
    assert floors[4] < floors[0]  # the states: half the cross bytes of the float cache
    # the encoder apart: a step encodes, the next runs the prompts (on the CPU, right after)
    assert report.count("Scriba's steps (host time of each step() call): 2 admitting steps") == 1
    # exposed host time from unprofiled steps, the profiled figure beside it
    assert report.count("exposed host time per decode step (unprofiled step less profiled device time)") == 5
    assert report.count("the 20 steps before, unprofiled:") == 5


def test_each_variant_gets_the_tuned_launches_of_its_kind(tmp_path):
    (tmp_path / "best_float32.json").write_text('{"tile": 32}')  # no fp8 file: fp8 keeps LAUNCH's
    (tmp_path / "decode_fp8.json").write_text('{"tile": 64}')
    out = tmp_path / "states.txt"
    bench_gpu.LINES.clear()
    default = dict(bench_gpu.paged_states_triton.LAUNCH)
    decode_default = dict(bench_gpu.paged_decode_plan.LAUNCH)
    argv = ["--tiny", "--device", "cpu", "--batch", "2", "--new-tokens", "3", "--models", "whisper"]
    pattern = str(tmp_path / "best_{kind}.json")
    variants = "async+states,fp8+states,async,fp8+launch"
    decode = ["--decode-launch", str(tmp_path / "decode_{kind}.json")]  # only "+launch" variants take it
    argv += ["--skip-transformers", "--variants", variants, "--states-launch", pattern, *decode]
    bench_gpu.main([*argv, "--out", str(out)])
    report = out.read_text()
    assert f"(async+states) states launch: {dict(default, tile=32)}" in report
    assert f"(fp8+states) states launch: {default}" in report
    assert report.count("states launch:") == 2  # logged only where states are read
    assert f"(fp8+launch) paged decode launch: {dict(decode_default, tile=64)}" in report
    assert f"(fp8+states) paged decode launch: {decode_default}" in report
    assert bench_gpu.paged_states_triton.LAUNCH == default  # restored after the run
    assert bench_gpu.paged_decode_plan.LAUNCH == decode_default
    assert bench_gpu.launch_of('{"rows": 32}', "fp8", "float16") == {"rows": 32}
