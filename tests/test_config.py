"""One configuration for a model on a machine: every surface (Engine, transcribe(), the CLI, the
server, the web app, Ray) resolves the same EngineConfig for the same model and device, through
config.resolve_config, and the shared engine loops are keyed by it."""

import dataclasses

import pytest
from oracle import JFK

import scriba
from scriba import Engine
from scriba.app.cli.engine_options import FLAGS, default_of, engine_options
from scriba.app.cli.main import build_parser
from scriba.app.cli.transcribe_flags import transcribe_options
from scriba.config import CHOICES, GROUPS, OPTIONS, EngineConfig, resolve_config
from scriba.runtime.loops import get_loop, stats


def cli(*args: str):
    parsed = build_parser().parse_args(["transcribe", JFK, *args])
    return transcribe_options(parsed, engine_options(parsed))


def test_every_surface_resolves_the_same_config_for_the_bundled_model_on_the_cpu():
    from scriba.app.cluster.transcriber import Transcriber
    from scriba.app.server.models import ServedModels
    from scriba.app.ui.choices import BUNDLED, whisper_facts

    expected = resolve_config(None, device="cpu")
    profile = (expected.model_config.quantization, expected.execution_config.encoder_runtime)
    assert profile == ("int8", "openvino")
    engine = Engine(device="cpu")
    mine = {k: v for k, v in engine.config.options().items() if k not in ("model", "num_threads")}
    assert mine == {k: v for k, v in expected.options().items() if k not in ("model", "num_threads")}
    # the shared loop: transcribe(), the CLI's options, the server, the web app and Ray all land on it
    loop = get_loop(None, device="cpu")
    assert scriba.transcribe(JFK, device="cpu").text and get_loop(None, device="cpu") is loop
    options = cli("--device", "cpu")
    assert options.engine == {"device": "cpu"} and get_loop(options.model, **options.engine) is loop
    assert ServedModels([], None, [], 2, device="cpu").loop(None) is loop
    Transcriber(options)  # Ray's actor: loads its engine as it starts
    before = len(stats())
    assert get_loop(None, device="auto") is loop  # (no GPU here): the same configuration, one engine
    whisper_facts(BUNDLED)  # the page's default (device "auto" on this CPU)
    assert len(stats()) == before


def test_the_exact_mode_and_the_asked_for_options_win_over_the_profile():
    assert resolve_config(None, device="cpu", dtype="float32").model_config.quantization is None
    asked = resolve_config(None, device="cpu", kv_cache_dtype="fp8").cache_config.kv_cache_dtype
    assert asked == "fp8"
    runtime = resolve_config(None, device="cpu", encoder_runtime="torch").execution_config.encoder_runtime
    assert runtime == "torch"
    cached = cli("--device", "cpu", "--encoder-padding", "cached").engine
    assert resolve_config(None, **cached).execution_config.encoder_padding == "cached"


def test_a_text_model_keeps_the_config_defaults(tiny_bart):
    config = resolve_config(tiny_bart[0], device="cpu")
    assert (config.model_config.dtype, config.model_config.quantization) == ("float32", None)
    assert config.cache_config.kv_cache_dtype == "auto"


def test_the_config_is_grouped_by_concern_and_checked_once():
    assert list(GROUPS) == ["model_config", "cache_config", "scheduler_config", "execution_config"]
    names = [f.name for group in GROUPS.values() for f in dataclasses.fields(group)]
    assert len(names) == len(set(names)) == len(OPTIONS)  # one name per option, across the groups
    config = EngineConfig.create(device="cpu", block_size=32, max_num_seqs=3)
    assert (config.cache_config.block_size, config.scheduler_config.max_num_seqs) == (32, 3)
    assert EngineConfig.create(**config.options()).options() == config.options()
    with pytest.raises(TypeError, match="unknown option 'block_sise' \\(did you mean 'block_size'\\?\\)"):
        EngineConfig.create(block_sise=32)
    with pytest.raises(ValueError, match="kv_cache_dtype must be one of"):
        resolve_config(None, device="cpu", kv_cache_dtype="int4")


def test_the_command_line_writes_no_default_of_its_own():
    """Every engine flag defaults to None (the profile's or EngineConfig's default applies) and
    offers config's choices; every transcription flag not given leaves TranscribeOptions' default."""
    parsed = build_parser().parse_args(["transcribe", JFK])
    assert engine_options(parsed) == {}
    for option in FLAGS:
        assert getattr(parsed, option) is None
    assert cli() == scriba.TranscribeOptions()
    assert cli("--patience", "2", "--no-timestamps").patience == 2.0
    assert cli("--no-timestamps").timestamps is False
    help_text = build_parser()._subparsers._group_actions[0].choices["transcribe"].format_help()
    assert f"(default: {default_of('dtype')})" in help_text and "(default: 1.0)" in help_text
    for option, values in CHOICES.items():
        if option in FLAGS:
            assert all(str(v) in help_text for v in values), option
