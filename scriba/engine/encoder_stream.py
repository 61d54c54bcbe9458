"""Admitted requests' encoder apart from the decoder steps (EngineConfig.encoder_stream).

A decode step is bound by memory (every sequence's cached K/V read), an encoder pass by compute.
On a GPU the admitted windows' encoder and their cross-attention K/V writes run on a CUDA stream
of their own, so the running requests keep decoding on the main stream meanwhile; each launch
records an event, and a group's prompt joins the first step scheduled after its event fired
(EncoderRun.done, no host wait). On the CPU the encoder runs at once, inside the step that
admits the group (nothing runs beside it), and its prompt joins the next step.

Two orders keep the shared cache safe: the encoder starts only after the main stream's work
already queued (blocks it is given may have been freed by a step still running), and the main
stream waits for the encoder (`fence`) before a step that may reuse blocks freed from a group
whose encoder had not finished.
"""

from __future__ import annotations

import contextlib
from collections import deque

import torch

from scriba.engine.step_packing import Running, max_diff, pack_prefills
from scriba.engine.to_device import stack_to_device, to_device
from scriba.kernels import AttentionMetadata


class EncoderStream:
    def __init__(self, model, device: torch.device, dtype: torch.dtype, block_size: int, backend):
        if not hasattr(model, "write_cross_kv"):
            raise ValueError(
                "encoder_stream=True needs a model that writes its cross-attention K/V without its "
                f"decoder; {type(model).__name__} does not"
            )
        self.model = model
        self.device, self.dtype, self.block_size, self.backend = device, dtype, block_size, backend
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.events: deque = deque()  # launched and maybe running, oldest first

    @torch.inference_mode()
    def launch(self, encodes: list[Running]) -> None:
        """Encode the groups' inputs into their cross blocks; mark each group's EncoderRun."""
        self._forget_finished()
        pre = pack_prefills(encodes, self.block_size)
        with self._on_stream():
            cu = pre.encoder_cu_seqlens
            meta = AttentionMetadata(
                backend=self.backend,
                num_encoder_tokens=cu[-1],
                encoder_max_seqlen=max_diff(cu),
                encoder_cu_seqlens=to_device(cu, self.device, torch.int32),
                cross_slot_mapping=to_device(pre.cross_slot_mapping, self.device, torch.int64),
            )
            if pre.features:  # [requests, mel_bins, frames]
                inputs, positions = stack_to_device(pre.features, self.device).to(self.dtype), None
            else:  # [encoder tokens] token ids and their positions
                inputs = to_device(pre.encoder_input_ids, self.device, torch.int64)
                positions = to_device(pre.encoder_positions, self.device, torch.int64)
            self.model.write_cross_kv(inputs, meta, positions)
        if self.stream is None:
            return
        event = torch.cuda.Event()
        event.record(self.stream)
        self.events.append(event)
        for running in encodes:
            running.group.encoder_run.event = event

    def _on_stream(self):
        if self.stream is None:
            return contextlib.nullcontext()
        self.stream.wait_stream(torch.cuda.current_stream(self.device))  # blocks freed by queued steps
        return torch.cuda.stream(self.stream)

    def fence(self) -> None:
        """The main stream's next work waits for every encoder launched so far (queued, no host wait)."""
        if self.stream is not None:
            torch.cuda.current_stream(self.device).wait_stream(self.stream)

    def wait_oldest(self) -> None:
        """Block the host until the oldest unfinished encoder is done (when nothing else can run)."""
        self._forget_finished()
        if self.events:
            self.events.popleft().synchronize()

    def _forget_finished(self) -> None:
        while self.events and self.events[0].query():
            self.events.popleft()
