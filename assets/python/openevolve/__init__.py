"""Minimal stand-in for the `openevolve` package, provided by Galapagos so
that evaluators written for OpenEvolve (which import
`openevolve.evaluation_result.EvaluationResult`) run unchanged."""

from openevolve.evaluation_result import EvaluationResult

__all__ = ["EvaluationResult"]
