"""Model definitions (BART, mBART), their Attention layer, registry and weight loading."""

from scriba.models.registry import MODEL_REGISTRY, load_model, model_class_for

__all__ = ["MODEL_REGISTRY", "load_model", "model_class_for"]
