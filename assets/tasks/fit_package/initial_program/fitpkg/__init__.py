"""fitpkg: a small model of an unknown 1-D signal, y = predict(x)."""

from fitpkg.model import predict

__all__ = ["predict"]
