"""Attention ops and the per-step attention metadata. Imports nothing else of Scriba's."""

from scriba.kernels.backend import TorchBackend, get_backend
from scriba.kernels.metadata import AttentionMetadata, AttentionType

__all__ = ["AttentionMetadata", "AttentionType", "TorchBackend", "get_backend"]
