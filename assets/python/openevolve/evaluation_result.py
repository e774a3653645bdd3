"""`EvaluationResult`: metrics plus optional side-output artifacts, the
return type OpenEvolve-style evaluators may use instead of a plain dict.

Written for Galapagos; compatible with the OpenEvolve interface
(`metrics`, `artifacts`, `from_dict`, `to_dict`, `has_artifacts`)."""

from dataclasses import dataclass, field
from typing import Any, Dict, Union


@dataclass
class EvaluationResult:
    """Numeric metrics (fitness is `combined_score`) and free-form artifacts
    (strings or bytes: stderr, feedback, profiling...)."""

    metrics: Dict[str, float]
    artifacts: Dict[str, Union[str, bytes]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: Dict[str, Any]) -> "EvaluationResult":
        """Wrap a plain metrics dict (the older evaluator return type)."""
        return cls(metrics=dict(metrics))

    def to_dict(self) -> Dict[str, Any]:
        """The metrics as a plain dict (artifacts are not included)."""
        return dict(self.metrics)

    def has_artifacts(self) -> bool:
        """True when any artifact is attached."""
        return bool(self.artifacts)

    def get_artifact_keys(self) -> list:
        """Names of the attached artifacts."""
        return list(self.artifacts.keys())

    def get_artifact_size(self, key: str) -> int:
        """Size in bytes of one artifact (0 when absent)."""
        value = self.artifacts.get(key)
        if value is None:
            return 0
        if isinstance(value, bytes):
            return len(value)
        return len(str(value).encode("utf-8"))

    def get_total_artifact_size(self) -> int:
        """Total size in bytes of all artifacts."""
        return sum(self.get_artifact_size(k) for k in self.artifacts)
