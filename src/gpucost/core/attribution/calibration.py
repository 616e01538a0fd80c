"""Confidence calibration: weights that make the calibration set look like the workloads to score,
top-label Platt scaling shrunk toward the identity, and the threshold for a target accuracy."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize

from gpucost.core.attribution.features import NONE, gpu_hours

_CAL_PRIOR = 50.0  # pseudo-workloads of evidence for the identity calibration map


CAL_MIN = 30  # fewest hold-out workloads to calibrate on (else raw probabilities, said so)


THRESHOLD_FLOOR = 0.5  # a threshold derived from a target accuracy never places a coin flip


def calibration_weights(
    calibration: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]
) -> list[float]:
    """Weights that make the calibration set look like the workloads the model will score.

    Each calibration workload weighs its GPU-hours (money is what the quality is measured in) times
    target share / calibration share of GPU-hours of its owner kind (``created_by_kind``: notebooks,
    jobs, training jobs, deployments): covariate-shift correction from features only, never from
    the targets' (unknown) projects. Kinds absent from the targets keep their own weight.
    """

    def shares(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        acc: dict[str, float] = defaultdict(float)
        for r in rows:
            acc[str(r.get("created_by_kind") or NONE)] += gpu_hours(r)
        total = sum(acc.values())
        return {k: v / total for k, v in acc.items()} if total else {}

    have, want = shares(calibration), shares(targets)
    return [
        gpu_hours(r) * (want[k] / have[k] if k in want else 1.0)
        for r in calibration
        for k in [str(r.get("created_by_kind") or NONE)]
    ]


class TopLabelCalibrator:
    """P(first candidate right | its raw probability p): sigmoid(a * logit(p) + b) fitted on a
    hold-out by weighted maximum likelihood, shrunk toward the identity (a = 1, b = 0).

    Platt scaling of the top label, with a Gaussian prior of ``_CAL_PRIOR`` pseudo-workloads on
    the identity: a hold-out of a few hundred workloads, dominated in money by a few dozen large
    ones, moves the map only as far as it has evidence to. Capped below 1 by half an observation
    (a finite hold-out never makes a prediction certain). Deterministic (L-BFGS-B from a=1, b=0).
    """

    def __init__(self, top: np.ndarray, correct: np.ndarray, weight: np.ndarray) -> None:
        z = _logit(top)
        y = correct.astype(float)
        w = np.asarray(weight, dtype=float)
        w = w * (len(w) / w.sum()) if w.sum() > 0 else np.ones(len(z))

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            a, b = theta
            q = 1.0 / (1.0 + np.exp(-(a * z + b)))
            q = np.clip(q, 1e-12, 1 - 1e-12)
            nll = -np.sum(w * (y * np.log(q) + (1 - y) * np.log(1 - q)))
            prior = 0.5 * _CAL_PRIOR * ((a - 1.0) ** 2 + b**2)
            r = w * (q - y)
            grad = np.array([np.sum(r * z) + _CAL_PRIOR * (a - 1.0), np.sum(r) + _CAL_PRIOR * b])
            return float(nll + prior), grad

        result = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
        self.a, self.b = (float(v) for v in result.x)
        self.cap = 1.0 - 0.5 / (len(z) + 1)

    @classmethod
    def of(cls, a: float, b: float, cap: float) -> TopLabelCalibrator:
        """A fitted map from its parameters (a stored model version's)."""
        cal = cls.__new__(cls)
        cal.a, cal.b, cal.cap = float(a), float(b), float(cap)
        return cal

    def predict(self, top: np.ndarray) -> np.ndarray:
        q = 1.0 / (1.0 + np.exp(-(self.a * _logit(top) + self.b)))
        return np.minimum(q, self.cap)


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def threshold_for_accuracy(
    confidences: Sequence[float],
    weights: Sequence[float],
    target: float,
    *,
    floor: float = THRESHOLD_FLOOR,
) -> float:
    """The lowest confidence threshold whose auto-placed workloads are, by their own calibrated
    confidences, ``target`` right on average (weighted by ``weights``, e.g. GPU-hours: money).

    Workloads are taken most confident first, every workload of one confidence together; the
    threshold is the confidence of the last group taken while the weighted mean confidence of all
    taken stays at or above ``target``. Never below ``floor``; 1.0 (nothing placed: confidences are
    capped below 1) when even the most confident group is below ``target``. Label-free: it reads
    the workloads to place, so it trusts the calibration (``rpt_attribution_quality`` measures it).
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target accuracy must be in (0, 1], got {target}")
    groups: dict[float, float] = defaultdict(float)
    for c, w in zip(confidences, weights, strict=True):
        groups[float(c)] += max(float(w), 0.0)
    taken = right = 0.0
    threshold = 1.0
    for c in sorted(groups, reverse=True):
        if c < floor:
            break
        w = groups[c]
        if taken + w > 0 and (right + c * w) / (taken + w) < target:
            break
        taken, right, threshold = taken + w, right + c * w, c
    return threshold
