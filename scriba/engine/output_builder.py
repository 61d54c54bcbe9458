"""A request's RequestOutput from its sequence group: completions (sampled or beam), the
echoed prompt fields, the model's annotations (e.g. a speech model's language); text on demand."""

from __future__ import annotations

from scriba.engine.outputs import CompletionOutput, RequestOutput
from scriba.engine.sequence import SequenceGroup


class OutputBuilder:
    def __init__(self, tokenizer, request_processing):
        self.tokenizer = tokenizer
        self.request_processing = request_processing  # the model's: its `annotate`

    def build(self, group: SequenceGroup) -> RequestOutput:
        inputs = group.inputs
        if group.beam is not None and group.is_finished:
            completions = self._beam_completions(group)
        else:
            completions = self._completions(group)
        if group.echo is None:  # the request's fixed fields, built once (and shared by its outputs)
            group.echo = dict(
                request_id=group.request_id,
                prompt=self._prompt_text(group),
                prompt_token_ids=list(inputs.decoder_token_ids),
                encoder_prompt=inputs.encoder_prompt,
                encoder_prompt_token_ids=list(inputs.encoder_token_ids),
            )
        return RequestOutput(
            **group.echo,
            annotations=self.request_processing.annotate(inputs, group.seqs[0], group.prompt_logprob),
            outputs=completions,
            finished=group.is_finished,
        )

    def _completions(self, group: SequenceGroup) -> list[CompletionOutput]:
        params = group.params
        skip = params.skip_special_tokens
        completions = []
        for i, seq in enumerate(group.seqs):
            finished = seq.status.is_finished
            if finished and params.logprobs is not None:
                self._name_logprob_tokens(seq)
            completions.append(
                CompletionOutput(
                    index=i,
                    token_ids=seq.output_token_ids,
                    cumulative_logprob=seq.cumulative_logprob,
                    logprobs=list(seq.logprobs) if params.logprobs is not None else None,
                    finish_reason=seq.status.value if finished else None,
                    stop_reason=seq.stop_reason,
                    detokenize=lambda ids, skip=skip: self._decode(ids, skip),
                    cross_attentions=seq.cross_attentions,
                )
            )
        return completions

    def _name_logprob_tokens(self, seq) -> None:
        """Fill `decoded_token` of a finished sequence's log-probs, once."""
        if self.tokenizer is None:
            return
        for top in seq.logprobs:
            for tid, lp in top.items():
                if lp.decoded_token is None:
                    lp.decoded_token = self.tokenizer.decode([tid])

    def _beam_completions(self, group: SequenceGroup) -> list[CompletionOutput]:
        """The best finished hypotheses, best first; `score` is transformers' sequences_scores."""
        params, prompt_len = group.params, len(group.inputs.decoder_token_ids)
        completions = []
        for i, hyp in enumerate(group.beam.results(params.num_return_sequences)):
            ids = hyp.token_ids[prompt_len:]
            completions.append(
                CompletionOutput(
                    index=i,
                    token_ids=ids,
                    cumulative_logprob=hyp.score
                    * (len(hyp.token_ids) - group.beam.prompt_len) ** params.length_penalty,
                    logprobs=None,
                    finish_reason="stop" if hyp.is_eos else "length",
                    score=hyp.score,
                    detokenize=lambda ids, skip=params.skip_special_tokens: self._decode(ids, skip),
                )
            )
        return completions

    def _prompt_text(self, group: SequenceGroup) -> str:
        """The decoder prompt as text: as given, or decoded once per request."""
        if group.inputs.decoder_prompt is None:
            group.inputs.decoder_prompt = self._decode(group.inputs.decoder_token_ids, False)
        return group.inputs.decoder_prompt

    def _decode(self, ids: list[int], skip_special_tokens: bool) -> str:
        if self.tokenizer is None:
            return ""
        known = len(self.tokenizer)  # ids past the tokenizer (timestamp tokens) have no text
        return self.tokenizer.decode([t for t in ids if t < known], skip_special_tokens=skip_special_tokens)
