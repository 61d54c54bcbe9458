"""Model definitions (BART, mBART, Whisper), their Attention layer, registry and weight loading."""

from scriba.models.registry import MODEL_REGISTRY, default_model_path, load_model, model_class_for

__all__ = ["MODEL_REGISTRY", "default_model_path", "load_model", "model_class_for"]
