"""Silero VAD's speech probabilities for a whole recording in a few batched calls.

Silero VAD (the silero-vad package's model and weights) reads 32 ms frames, 512 samples at 16 kHz
each with the 64 before it, through a short-time Fourier transform and four convolutions, then an
LSTM cell carried from frame to frame and an output layer. All but the LSTM read only their own
frame, so here they run over every frame at once (torch), the LSTM's input products too; what is
left of the LSTM, one small product a frame, is a serial numba loop. torch's own LSTM makes every
frame's step a parallel region of its thread pool: fast alone, but once another thread (the
engine's) has used the pool, each region waits to wake a sleeping worker, 15x slower.
0.3 s for a 7.8-minute recording against 0.66 s for silero's own "sequence" ONNX model (one
onnxruntime call per 16 s on one thread; 85% of it the convolutions), the per-frame
probabilities within 1e-5 of it (tests/transcription/test_vad.py).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

FRAME, CONTEXT = 512, 64  # samples at 16 kHz: a frame, and the samples before it it also reads
_STRIDES = (1, 2, 2, 1)  # the encoder's four convolutions


class SileroBatched:
    """`audio_forward(wave)` -> one speech probability per 32 ms frame, from the weights of
    silero-vad's TorchScript model (`silero_vad.load_silero_vad(onnx=False)`)."""

    def __init__(self, scripted: torch.nn.Module):
        model = scripted._model  # the 16 kHz network
        weights = {name: p.detach().clone() for name, p in model.named_parameters()}
        self.basis = dict(model.named_buffers())["stft.forward_basis_buffer"].clone()  # [258, 1, 256]
        self.hop = int(model.stft.hop_length)
        self.convs = [
            (weights[f"encoder.{i}.reparam_conv.weight"], weights[f"encoder.{i}.reparam_conv.bias"], s)
            for i, s in enumerate(_STRIDES)
        ]
        rnn = "decoder.rnn."  # an LSTMCell: gates i, f, g, o
        self.input_gates = (weights[rnn + "weight_ih"], weights[rnn + "bias_ih"] + weights[rnn + "bias_hh"])
        self.hidden_gates = weights[rnn + "weight_hh"].numpy()  # [4 * hidden, hidden]
        self.out = (weights["decoder.decoder.2.weight"], weights["decoder.decoder.2.bias"])

    @staticmethod
    def frames(wave: np.ndarray) -> torch.Tensor:
        """[frames, CONTEXT + FRAME + CONTEXT]: each frame after the CONTEXT samples before it
        (zeros before the start, the last frame zero-padded), reflected at its end as Silero's
        STFT pads it."""
        count = -(-wave.size // FRAME)
        padded = np.zeros(CONTEXT + count * FRAME, np.float32)
        padded[CONTEXT : CONTEXT + wave.size] = wave
        step = padded.strides[0]
        view = np.lib.stride_tricks.as_strided(padded, (count, CONTEXT + FRAME), (FRAME * step, step))
        return torch.nn.functional.pad(torch.from_numpy(view), (0, CONTEXT), mode="reflect")

    @torch.inference_mode()
    def audio_forward(self, wave: np.ndarray) -> np.ndarray:
        """wave [samples] float32 at 16 kHz -> [frames] float32 speech probabilities."""
        if wave.size == 0:
            return np.zeros(0, np.float32)
        spectrum = torch.conv1d(self.frames(wave)[:, None], self.basis, stride=self.hop)
        half = spectrum.shape[1] // 2
        hidden = torch.sqrt(spectrum[:, :half] ** 2 + spectrum[:, half:] ** 2)  # [frames, 129, 4]
        for weight, bias, stride in self.convs:
            hidden = torch.relu(torch.conv1d(hidden, weight, bias, stride=stride, padding=1))
        gates = torch.nn.functional.linear(hidden[:, :, 0], *self.input_gates)  # [frames, 4 * 128]
        states = torch.from_numpy(lstm_states(gates.numpy(), self.hidden_gates))  # [frames, 128]
        logits = torch.conv1d(torch.relu(states[:, :, None]), *self.out)  # [frames, 1, 1]
        return torch.sigmoid(logits)[:, 0, 0].numpy()


@numba.njit(fastmath=True, cache=True)
def lstm_states(input_gates, hidden_weight):
    """An LSTM cell run over the frames from a zero state: input_gates [T, 4H] (each frame's
    input product and both biases), hidden_weight [4H, H] -> every frame's h [T, H] float32."""
    steps, size = input_gates.shape[0], hidden_weight.shape[1]
    h = np.zeros(size, np.float32)
    c = np.zeros(size, np.float32)
    out = np.empty((steps, size), np.float32)
    gates = np.empty(4 * size, np.float32)
    for t in range(steps):
        for g in range(4 * size):
            acc = input_gates[t, g]
            for k in range(size):
                acc += hidden_weight[g, k] * h[k]
            gates[g] = acc
        for k in range(size):
            i = 1.0 / (1.0 + math.exp(-gates[k]))
            f = 1.0 / (1.0 + math.exp(-gates[size + k]))
            o = 1.0 / (1.0 + math.exp(-gates[3 * size + k]))
            c[k] = f * c[k] + i * math.tanh(gates[2 * size + k])
            h[k] = o * math.tanh(c[k])
        out[t] = h
    return out
