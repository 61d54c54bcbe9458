"""What runs a step's model and gives the sampled rows' logits: one executor a runner, chosen once
(ModelRunner.executor) by where and how the model runs.

- TorchExecutor: the model's modules, eagerly (anywhere; the others fall back to it).
- NumbaExecutor (a CPU's int8 pre-norm decoder, EngineConfig's decoder_runtime): decode-only
  steps of a few rows, and prefills of a few prompt tokens whose encoder writes the cross K/V, as
  one numba call over the int8 weights and the paged cache; a few rows' logits from its int8 codes.
- GraphExecutor (a GPU): decode steps replayed from CUDA graphs where one was captured for them,
  the other steps by the executor it replaced.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from scriba.engine.step_packing import prefill_rows
from scriba.models.decoder_step import MAX_ROWS


class TorchExecutor:
    def __init__(self, model):
        self.model = model

    def logits(self, step, prefills, picked: torch.Tensor, every_row: bool) -> torch.Tensor:
        """[picked rows, vocab] float32 of the step (StepInputs): the sampled rows' and the queried
        ones' in one pass. `every_row`: `picked` is every row, in order."""
        return self.model.compute_logits(self.hidden(step)[picked]).float()

    def hidden(self, step) -> torch.Tensor:
        encoder = (step.encoder_inputs, step.encoder_positions)
        return self.model(step.input_ids, step.positions, step.meta, *encoder)


class GraphExecutor(TorchExecutor):
    def __init__(self, graphs, fallback: TorchExecutor):
        super().__init__(fallback.model)
        self.graphs, self.fallback = graphs, fallback  # what runs the steps no graph was captured for

    def logits(self, step, prefills, picked: torch.Tensor, every_row: bool) -> torch.Tensor:
        if not self.graphs.fits(step.meta):
            return self.fallback.logits(step, prefills, picked, every_row)
        logits = self.graphs.run(step.input_ids, step.positions, step.meta).float()
        return logits if every_row else logits[picked]


class NumbaExecutor(TorchExecutor):
    def __init__(self, model, decode_step, self_rows, cross_rows):
        super().__init__(model)
        self.decode_step, self.self_rows, self.cross_rows = decode_step, self_rows, cross_rows

    def logits(self, step, prefills, picked: torch.Tensor, every_row: bool) -> torch.Tensor:
        if self.decode_step.fits(step.meta):
            hidden = self.decode_step(step.input_ids, step.positions, step.meta)
            return self.decode_step.logits(hidden if every_row else hidden[picked])
        hidden = self.prefill(step, prefills) if self.prefill_fits(step, prefills) else self.hidden(step)
        hidden = hidden[picked]
        if hidden.shape[0] <= MAX_ROWS:  # one read of the output projection's codes, no rounding
            return self.decode_step.logits(hidden)
        return self.model.compute_logits(hidden).float()

    def prefill_fits(self, step, prefills) -> bool:
        """A prefill-only step of a few prompt tokens, with every request's encoder input (one
        sequence each), of a model that writes its cross K/V without running its decoder."""
        meta = step.meta
        return (
            hasattr(self.model, "write_cross_kv")
            and not meta.num_decode_tokens
            and 0 < meta.num_prefill_tokens <= MAX_ROWS
            and meta.cross_kv_index is None
            and 0 < meta.num_encoder_tokens == sum(r.group.encoder_len for r in prefills)
            and step.encoder_inputs is not None
            and step.encoder_inputs.is_floating_point()  # features: not a text encoder's token ids
        )

    def prefill(self, step, prefills) -> torch.Tensor:
        """The step's windows through the encoder into the cross cache, then its prompt tokens
        through the numba step as decode rows, each reading its sequence up to itself (torch
        modules after the encoder cost 10 ms a prefill of tiny.en, the numba step ~2)."""
        self.model.write_cross_kv(step.encoder_inputs, step.meta)
        rows = prefill_rows(prefills, self.self_rows, self.cross_rows)
        meta = SimpleNamespace(
            slot_mapping=step.meta.slot_mapping, **{k: torch.from_numpy(a) for k, a in rows.items()}
        )
        return self.decode_step(step.input_ids, step.positions, meta)
