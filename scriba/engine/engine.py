"""The Engine: requests in, RequestOutputs out, one scheduled forward pass per `step()`."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence as Seq

import torch

from scriba.config import resolve_config
from scriba.engine.beam_search import BeamSearch
from scriba.engine.block_manager import BlockManager, blocks_for
from scriba.engine.generation_defaults import generation_defaults
from scriba.engine.inputs import PromptType
from scriba.engine.kernel_preload import preload_kernels
from scriba.engine.memory import kv_pool_sizes
from scriba.engine.model_runner import LaunchedStep, ModelRunner
from scriba.engine.output_builder import OutputBuilder
from scriba.engine.outputs import RequestOutput
from scriba.engine.request_processing import PreparedRequest, request_processing_for
from scriba.engine.sampling_params import SamplingParams
from scriba.engine.scheduler import Scheduler
from scriba.engine.sequence import SequenceGroup, SequenceStatus
from scriba.engine.threads import set_cpu_threads
from scriba.engine.tokenizer import load_tokenizer
from scriba.models import default_model_path, load_model
from scriba.models.fp8_linear import quantize_encoder_fp8
from scriba.models.packed_linear import pack_decoder, packs
from scriba.models.quantize import quantize_int8

logger = logging.getLogger("scriba")


class Engine:
    """A paged encoder/decoder engine for one model.

    `Engine(MODEL, max_num_seqs=64)` (a hub id or folder): keyword arguments are EngineConfig's
    options, over the model's profile on this machine (config.resolve_config: on a CPU an audio
    model runs int8 unless `dtype="float32"`, the exact mode, is asked for); `Engine()` runs the
    bundled default model (models/registry.py), offline.
    Offline use: `generate(prompts, params)`. Online use: `add_request`, then `step()` until
    `has_unfinished_requests()` is False; `abort(request_id)` at any time.
    """

    def __init__(self, model: str | None = None, **kwargs):
        # the options over the model's profile on this machine; bad options fail first
        self.config = config = resolve_config(model, **kwargs)
        execution, model_config = config.execution_config, config.model_config
        if execution.device == "cpu":
            set_cpu_threads(config)
        if model is None:  # the offline default: the bundled tiny.en
            model = model_config.model = default_model_path()
        where = (execution.device, config.torch_dtype, model_config.revision)
        self.model, self.model_path = load_model(model, *where)
        cached_padding = execution.encoder_padding == "cached"
        self.model.compile_encoder(execution.encoder_runtime, torch.get_num_threads(), cached_padding)
        if execution.encoder_quantization == "fp8":
            quantize_encoder_fp8(self.model)
        if model_config.quantization == "int8" or self._runs_int8_checkpoint():
            quantize_int8(self.model)
            model_config.quantization = "int8"
        elif packs(execution.device, config.torch_dtype, model_config.quantization):
            pack_decoder(self.model)
        tokenizer = model_config.tokenizer
        self.tokenizer = load_tokenizer(tokenizer or self.model_path, explicit=tokenizer is not None)
        m = self.model
        eos = m.config.eos_token_id
        self.eos_token_ids: list[int] = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        self.request_processing = request_processing_for(m, self.tokenizer, self.eos_token_ids)
        self.outputs = OutputBuilder(self.tokenizer, self.request_processing)
        # read once: a config lookup costs per sequence per step
        self.max_decoder_len: int = m.max_decoder_len
        self.runner = ModelRunner(
            m,
            execution.device,
            config.torch_dtype,
            config.cache_config.block_size,
            execution.attention_backend,
            config.torch_kv_cache_dtype,
            execution.decoder_runtime,
            execution.encoder_stream,
        )
        self._build_kv_cache()
        self.scheduler = Scheduler(config, self.block_manager)
        self.generator = torch.Generator(device=execution.device).manual_seed(model_config.seed)
        self.groups: dict[str, SequenceGroup] = {}
        self.in_flight: LaunchedStep | None = None  # asynchronous scheduling: the step not yet read
        self._request_ids = itertools.count()
        # the first step's compiled kernels load while the first request is read
        self.kernels_loading = preload_kernels(self.runner, self.request_processing)

    def _build_kv_cache(self) -> None:
        """Size the KV pools (from memory unless given), allocate them, capture decode graphs."""
        config, m, runner = self.config, self.model, self.runner
        size, scheduler = config.cache_config.block_size, config.scheduler_config
        on_gpu = runner.device.type == "cuda"
        pools = kv_pool_sizes(config, runner)
        runner.allocate_kv_caches(pools.device_blocks, pools.cpu_blocks)
        self.block_manager = BlockManager(size, pools.device_blocks, pools.cpu_blocks)
        if on_gpu and config.execution_config.cuda_graphs and runner.backend.is_graph_safe:
            runner.capture_decode_graphs(
                min(scheduler.max_num_seqs, 256),
                blocks_for(m.max_decoder_len, size),
                blocks_for(m.max_encoder_len, size),
            )
            runner.capture_encoder_graphs(scheduler.max_num_batched_tokens // m.max_encoder_len)
        graphed = [what for what, on in (("decode", runner.graphs), ("the encoder", m.encoder_graphs)) if on]
        logger.info(
            "KV cache: %s; attention backend %r%s",
            pools.describe(m.max_encoder_len, m.max_decoder_len),
            runner.backend.name,
            ", CUDA graphs for " + " and ".join(graphed) if graphed else "",
        )

    # -- online API ---------------------------------------------------------------------------
    def prepare(self, prompt: PromptType, params: SamplingParams | None = None) -> PreparedRequest:
        """Validate and prepare a request (tokenize; decode audio, compute features) without
        touching the engine's state: safe from any thread, so callers do their own input work."""
        return self.request_processing.prepare(prompt, params)

    def add_request(
        self, request_id: str, prompt: PromptType | PreparedRequest, params: SamplingParams | None = None
    ) -> None:
        """Validate and queue one request (a prompt, or what `process` made of one with its
        params); a bad one raises ValueError and changes nothing."""
        if request_id in self.groups:
            raise ValueError(f"request id {request_id!r} is already in use")
        request = prompt if isinstance(prompt, PreparedRequest) else self.prepare(prompt, params)
        inputs, params = request.inputs, request.params
        self._check_fits(inputs.encoder_len, inputs.decoder_token_ids, params)
        self._check_heads(params.cross_attention_heads)
        generator = self.generator
        if params.seed is not None:
            generator = torch.Generator(device=self.config.execution_config.device).manual_seed(params.seed)
        group = SequenceGroup(request_id, inputs, params, generator, arrival=time.monotonic())
        group.processors, group.prompt_logprob_query = request.processors, request.prompt_logprob_query
        if params.use_beam_search:
            stops = [] if params.ignore_eos else self.eos_token_ids + params.stop_token_ids
            max_len = min(len(inputs.decoder_token_ids) + params.max_tokens, self.model.max_decoder_len)
            group.beam = BeamSearch(params, request.beam_begin, max_len, stops)
        self.groups[request_id] = group
        self.scheduler.add(group)

    def _check_heads(self, heads: list[tuple[int, int]] | None) -> None:
        if heads is None:
            return
        if not hasattr(self.model, "cross_attentions"):
            raise ValueError(
                f"this model ({type(self.model).__name__}) does not return cross_attention_heads"
            )
        layers, num_heads = self.model.num_decoder_layers, self.model.num_decoder_heads
        bad = [h for h in heads if h[0] >= layers or h[1] >= num_heads]
        if bad:
            raise ValueError(f"cross_attention_heads {bad} out of range: {layers} layers x {num_heads} heads")

    def _check_fits(self, encoder_len: int, decoder_ids: list[int], params: SamplingParams) -> None:
        max_num_seqs = self.config.scheduler_config.max_num_seqs
        if params.num_seqs > max_num_seqs:
            what = f"beam_width={params.beam_width}" if params.use_beam_search else f"n={params.n}"
            raise ValueError(f"{what} is more than max_num_seqs={max_num_seqs} sequences per step")
        bm = self.block_manager
        longest = min(len(decoder_ids) + params.max_tokens, self.model.max_decoder_len)
        need = bm.num_blocks_needed(encoder_len, [longest] * params.num_seqs)
        room = bm.num_total() - bm.watermark_blocks
        if need > room:
            raise ValueError(
                f"request needs up to {need} KV blocks but the pool has {room}: "
                "raise num_kv_blocks or lower max_tokens / n"
            )

    def abort(self, request_id: str | Seq[str]) -> None:
        for rid in [request_id] if isinstance(request_id, str) else request_id:
            if self.groups.pop(rid, None) is not None:
                group = self.scheduler.abort(rid)
                for seq in group.seqs if group is not None else []:
                    seq.drop_pending()

    def _runs_int8_checkpoint(self) -> bool:
        """An int8 checkpoint (CTranslate2 int8*) runs in the int8 mode where it can: on the CPU
        in float32. Elsewhere (a GPU, or dtype bfloat16) its dequantized weights run."""
        on_cpu = self.config.execution_config.device == "cpu"
        return bool(self.model.int8_weights) and on_cpu and self.config.torch_dtype == torch.float32

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished() or self.in_flight is not None

    def step(self) -> list[RequestOutput]:
        """Run one step; return the outputs of the requests whose tokens it read (and finished).

        Under asynchronous scheduling (SchedulerConfig.async_scheduling) the step launched now is
        read by the next `step()`: its sequences hold PENDING places meanwhile, and its
        sampled tokens are the next step's inputs on the device. A step with beam search or
        an n > 1 request's first token is read at once (the host decides what runs next)."""
        sched = self.scheduler.schedule()
        launched = self.runner.launch(sched, self.block_manager, feed=self.in_flight)
        if not launched.rows and not sched.encodes and self.runner.encoder_stream is not None:
            self.runner.encoder_stream.wait_oldest()  # nothing runs until an encoder finishes: no spinning
        at_once = not self.config.scheduler_config.async_scheduling or any(
            g.beam is not None or g.needs_fork for g, _ in launched.rows
        )
        previous, self.in_flight = self.in_flight, (None if at_once or not launched.rows else launched)
        if self.in_flight is not None:
            self._hold_places(launched)
        groups = self._apply_results(previous) if previous is not None else []
        if self.in_flight is None:
            groups += self._apply_results(launched)
        live = [g for g in groups if self.groups.get(g.request_id) is g]  # not aborted meanwhile
        outputs = [self.outputs.build(g) for g in dict.fromkeys(live + sched.aborted)]
        for out in outputs:
            if out.finished:
                self.groups.pop(out.request_id, None)
        return outputs

    def _hold_places(self, launched) -> None:
        """Each launched sequence's next token takes its place before it is read; one that
        reaches a length limit with it is capped (not scheduled again: it ends there)."""
        for group, seq in launched.rows:
            seq.append_pending()
            if seq.num_output_tokens >= group.params.max_tokens or len(seq.token_ids) >= self.max_decoder_len:
                seq.capped = True

    def _apply_results(self, launched) -> list[SequenceGroup]:
        """Read a launched step's results into its sequences; the groups it touched."""
        results = launched.result()
        seqs_of: dict[SequenceGroup, list] = {}
        for group, seq in launched.rows:
            seqs_of.setdefault(group, []).append(seq)
        for group, seqs in seqs_of.items():
            self._apply_samples(group, seqs, results.samples)
            if group.request_id in results.prompt_logprobs:
                group.prompt_logprob = results.prompt_logprobs[group.request_id]
        self._cross_attentions(list(seqs_of))
        self.scheduler.remove_finished()
        return list(seqs_of)

    def _own_generators(self, group: SequenceGroup) -> None:
        """A seeded request's samples each draw from a generator of their own once forked: a
        sample that ends (or a step launched before its end was read) never shifts another's
        draws, so the samples are the same whatever the scheduling."""
        if group.params.seed is None:
            return
        device = self.config.execution_config.device
        for i, seq in enumerate(group.seqs):
            seq.generator = torch.Generator(device=device).manual_seed(group.params.seed + 7919 * (i + 1))

    def _apply_samples(self, group: SequenceGroup, seqs: list, results) -> None:
        if group.beam is not None:
            return self._apply_beams(group, results)
        for seq in seqs:
            if seq.status.is_finished:  # aborted, or (asynchronous) stopped at its previous token
                continue
            samples = results[seq.seq_id]
            for extra in samples[1:]:  # first step of an n > 1 request: fork the samples
                child = seq.fork()
                self.block_manager.fork(seq.seq_id, child.seq_id)
                child.append(extra.token_id, extra.logprob, extra.top_logprobs)
                group.seqs.append(child)
                self._check_stop(group, child, extra.token_id)
            if len(samples) > 1:
                self._own_generators(group)
            first = samples[0]
            if seq.pending:
                seq.fill_pending(first.token_id, first.logprob, first.top_logprobs)
            else:
                seq.append(first.token_id, first.logprob, first.top_logprobs)
            self._check_stop(group, seq, first.token_id)

    def _apply_beams(self, group: SequenceGroup, results) -> None:
        """One beam-search step: the chosen continuations become the running beams; a beam
        chosen twice is forked (its blocks shared, copied on write); unchosen beams are freed."""
        beams = group.seqs_with(SequenceStatus.RUNNING)
        top = results[beams[0].seq_id]  # the search's BeamCandidates, best first
        if len(beams[0].token_ids) < group.beam.prompt_len:  # e.g. a detected language, forced tokens
            beams[0].append(top.token_ids[0], top.logprobs[0], None)  # the one beam's best token
            return
        picked = group.beam.step([s.token_ids for s in beams], top)
        claimed: set[int] = set()
        children = []
        for sel in picked:
            parent = beams[sel.parent]
            if sel.parent in claimed:
                child = parent.fork()
                self.block_manager.fork(parent.seq_id, child.seq_id)
            else:
                claimed.add(sel.parent)
                child = parent
            children.append(child)
        for child, sel in zip(children, picked):
            child.append(sel.token_id, sel.logprob, None)
        for i, seq in enumerate(beams):
            if i not in claimed:
                self.block_manager.free(seq.seq_id)
        group.seqs = children
        if group.beam.done:
            for seq in children:
                seq.status = SequenceStatus.FINISHED_STOPPED
                self.block_manager.free(seq.seq_id)

    def _cross_attentions(self, groups: list[SequenceGroup]) -> None:
        """The asked-for cross-attention weights of the sequences that just finished, while
        their requests' cross K/V are still cached: one batched pass per kind of ask."""
        asks: dict[tuple, list] = {}
        for group in groups:
            heads, wanted = group.params.cross_attention_heads, group.params.cross_attention_wanted
            for seq in group.seqs if heads is not None else []:
                if not seq.status.is_finished or seq.cross_attentions is not None or seq.alignment_skipped:
                    continue
                if wanted is None or wanted(seq.output_token_ids):
                    asks.setdefault((tuple(heads), group.inputs.encoder_len), []).append((group, seq))
                else:
                    seq.alignment_skipped = True
        for (heads, positions), pairs in asks.items():
            requests = [(self.block_manager.cross_block_table(g.request_id), s.token_ids) for g, s in pairs]
            for (_, seq), weights in zip(pairs, self.runner.cross_attentions(requests, positions, heads)):
                seq.cross_attentions = weights

    def _check_stop(self, group: SequenceGroup, seq, token: int) -> None:
        """Finish `seq` if `token`, its latest read token, ends it; tokens still pending after
        it (asynchronous scheduling) are dropped."""
        params, read = group.params, len(seq.token_ids) - seq.pending
        if token in self.eos_token_ids and not params.ignore_eos:
            seq.status = SequenceStatus.FINISHED_STOPPED
        elif token in params.stop_token_ids:
            seq.status, seq.stop_reason = SequenceStatus.FINISHED_STOPPED, token
        elif read - seq.prompt_len >= params.max_tokens or read >= self.max_decoder_len:
            seq.status = SequenceStatus.FINISHED_LENGTH
        else:
            return
        seq.drop_pending()
        self.block_manager.free(seq.seq_id)

    def generation_defaults(self, task: str | None = None, **overrides) -> SamplingParams:
        """SamplingParams from the checkpoint's generation config (and `task`'s settings in
        config.json), then `overrides`: e.g. a summarizer's beam search and length penalty."""
        return generation_defaults(self.model, task, **overrides)

    # -- offline API --------------------------------------------------------------------------
    def generate(
        self,
        prompts: PromptType | Seq[PromptType],
        sampling_params: SamplingParams | Seq[SamplingParams] | None = None,
        use_tqdm: bool = False,
    ) -> list[RequestOutput]:
        """Run prompts to completion, batched; outputs in the order of the prompts.

        Every prompt is validated before any runs: a bad one raises ValueError naming its
        index, and none of this call's requests stay queued.
        """
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        params = sampling_params if isinstance(sampling_params, Seq) else [sampling_params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError(f"got {len(params)} sampling params for {len(prompts)} prompts")
        ids = [f"gen-{next(self._request_ids)}" for _ in prompts]
        for i, (rid, prompt, p) in enumerate(zip(ids, prompts, params)):
            try:
                self.add_request(rid, prompt, p)
            except (ValueError, TypeError) as e:
                self.abort(ids[:i])
                raise type(e)(f"prompt {i}: {e}") from None
        finished: dict[str, RequestOutput] = {}
        pending = set(ids)
        bar = _progress(len(ids)) if use_tqdm else None
        try:
            while pending:
                outputs = self.step()
                if not outputs and not self.scheduler.running and self.in_flight is None:
                    raise RuntimeError(f"the scheduler cannot place requests {sorted(pending)}")
                for out in outputs:
                    if out.finished and out.request_id in pending:
                        finished[out.request_id] = out
                        pending.discard(out.request_id)
                        if bar is not None:
                            bar.update(1)
        finally:  # interrupted (Ctrl-C, an error): leave none of this call's requests behind
            self.abort(sorted(pending))
            if bar is not None:
                bar.close()
        return [finished[rid] for rid in ids]


def _progress(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="requests", unit="req")
