"""Attribution quality, defined once: money-weighted coverage above a threshold, accuracy, the
reliability table, expected calibration error and the costliest confusions.

The one definition: the build's ``rpt_attribution_quality`` reads :func:`quality_rows` of the
hold-out (python model ``int_workload_attribution_quality``), and ``gpucost benchmark-attribution``
calls :func:`evaluate` on the untagged pods against the generator's truth.

A row is (predicted project, true project, confidence, weight). The weight is the workload's
money: a ``Decimal`` effective cost (the sums of money stay exact) or a float. Ratios are taken on
the weights as floats (``math.fsum``: one correctly rounded sum, whatever the row order).

An ECE measured on a few hundred workloads, weighted by money, is dominated by its costliest few:
even a perfectly calibrated model shows a large one there. So every ECE comes with what a perfectly
calibrated model would show on the same rows (:func:`calibrated_ece_band`: each workload right with
the probability its confidence states, the same weights and bins, seeded draws): its median and its
90th percentile. An ECE above that 90th percentile is evidence of miscalibration; one within the
band is not, however large it looks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from gpucost.core.attribution.cold_start import LEVELS
from gpucost.core.attribution.features import NONE

Row = tuple[str | None, str, float, Decimal | float]  # (predicted, true, confidence, weight)
CONFUSIONS = 5  # the costliest (true, predicted) mistakes kept
ECE_DRAWS = 200  # simulated outcomes behind calibrated_ece_band


@dataclass(frozen=True)
class QualityBin:
    """One equal-width confidence bin: ``low <= confidence < high`` (the last bin holds 1.0)."""

    index: int
    low: float
    high: float
    workloads: int
    cost: Decimal | float  # sum of the weights (exact for Decimal weights)
    auto_cost: Decimal | float  # of which at or above the threshold
    weight: float
    mean_confidence: float | None  # weighted; None when the bin weighs nothing
    accuracy: float | None  # weighted; None when the bin weighs nothing
    accuracy_by_count: float

    @property
    def calibration_error(self) -> float | None:
        """|accuracy - mean confidence| of the bin (None when it weighs nothing)."""
        if self.accuracy is None or self.mean_confidence is None:
            return None
        return abs(self.accuracy - self.mean_confidence)


@dataclass(frozen=True)
class Confusion:
    """One (true, predicted) mistake: ``predicted`` is :data:`NONE` when nothing was predicted."""

    true_project_id: str
    predicted_project_id: str
    workloads: int
    cost: Decimal | float
    auto_cost: Decimal | float


@dataclass(frozen=True)
class QualityReport:
    """Money-weighted quality of predictions against the truth. A ratio is None when its
    denominator is zero (no weight, nothing placed automatically)."""

    workloads: int
    cost: Decimal | float  # sum of the weights (exact for Decimal weights)
    auto_cost: Decimal | float  # of which with confidence >= threshold
    total_weight: float
    auto_weight: float
    coverage: float | None  # share of the weight with confidence >= threshold
    accuracy_auto: float | None  # weighted accuracy of the auto-attributed part
    accuracy_all: float | None  # weighted accuracy of the top candidate, all workloads
    accuracy_by_count: float | None  # share of the workloads right, unweighted
    mean_confidence: float | None  # weighted
    ece: float | None  # expected calibration error (weighted, equal-width bins)
    # the ECE a perfectly calibrated model would show on these rows: median, 90th percentile
    ece_if_calibrated: float | None
    ece_if_calibrated_p90: float | None
    reliability: tuple[QualityBin, ...]  # the bins holding at least one workload, in order
    confusions: tuple[Confusion, ...]  # the costliest mistakes, costliest first


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _bins(confidences: np.ndarray, bins: int) -> np.ndarray:
    """Each confidence's bin: min(floor(c * bins), bins - 1)."""
    return np.minimum(np.floor(confidences * bins).astype(int), bins - 1)


def calibrated_ece_band(
    confidences: Sequence[float],
    weights: Sequence[float],
    *,
    bins: int = 10,
    draws: int = ECE_DRAWS,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The ECE of a perfectly calibrated model on these rows: each row right with probability its
    confidence, over ``draws`` seeded draws, binned and weighted as :func:`evaluate` does. Returns
    (median, 90th percentile); None without weight. The same for the same rows in any order (they
    are drawn for in one canonical order: a build reads its rows in no fixed order)."""
    conf = np.clip(np.asarray(confidences, dtype=float), 0.0, 1.0)
    weight = np.asarray(weights, dtype=float)
    canonical = np.lexsort((weight, conf))
    conf, weight = conf[canonical], weight[canonical]
    total = weight.sum()
    if not len(conf) or total <= 0:
        return None
    index = _bins(conf, bins)
    bin_weight = np.bincount(index, weights=weight, minlength=bins)
    bin_conf = np.bincount(index, weights=weight * conf, minlength=bins)
    right = np.random.default_rng(seed).random((draws, len(conf))) < conf
    # per draw and bin: the weight of the rows right
    bin_right = np.zeros((draws, bins))
    for b in np.flatnonzero(bin_weight > 0):
        bin_right[:, b] = right[:, index == b] @ weight[index == b]
    gap = np.abs(bin_right - bin_conf)  # = bin weight x |accuracy - mean confidence|
    ece = gap.sum(axis=1) / total
    return float(np.median(ece)), float(np.quantile(ece, 0.9))


def evaluate(rows: Iterable[Row], *, threshold: float | None, bins: int = 10) -> QualityReport:
    """Quality of (predicted, true, confidence, weight) rows: coverage at or above ``threshold``
    (None: nothing is placed automatically), weighted accuracy, the reliability table, expected
    calibration error and the :data:`CONFUSIONS` costliest mistakes.

    Bin of a confidence c: min(floor(c * bins), bins - 1).
    ECE = sum over bins of (bin weight / total weight) * |bin accuracy - bin mean confidence|.
    Confusions rank by cost, then workloads (descending), then true and predicted project.
    """
    rows = list(rows)

    def is_auto(row: Row) -> bool:
        return threshold is not None and row[2] >= threshold

    def cost(part: Sequence[Row]) -> Decimal | float:
        return sum(w for *_, w in part)  # exact for Decimal weights

    def weight(part: Sequence[Row]) -> float:
        return math.fsum(float(w) for *_, w in part)

    def right(part: Sequence[Row]) -> float:
        return math.fsum(float(w) for p, t, _, w in part if p == t)

    by_bin: dict[int, list[Row]] = {}
    indices = _bins(np.array([r[2] for r in rows], dtype=float), bins)
    for row, index in zip(rows, indices, strict=True):
        by_bin.setdefault(int(index), []).append(row)
    table = []
    for index in sorted(by_bin):
        part = by_bin[index]
        part_weight = weight(part)
        table.append(
            QualityBin(
                index=index,
                low=index / bins,
                high=(index + 1) / bins,
                workloads=len(part),
                cost=cost(part),
                auto_cost=cost([r for r in part if is_auto(r)]),
                weight=part_weight,
                mean_confidence=_ratio(math.fsum(c * float(w) for _, _, c, w in part), part_weight),
                accuracy=_ratio(right(part), part_weight),
                accuracy_by_count=sum(p == t for p, t, _, _ in part) / len(part),
            )
        )
    total = weight(rows)
    auto = [r for r in rows if is_auto(r)]
    auto_weight = weight(auto)
    terms = [
        b.weight / total * b.calibration_error for b in table if b.calibration_error is not None
    ]
    ece = math.fsum(terms) if total and terms else None
    band = (
        calibrated_ece_band([r[2] for r in rows], [float(r[3]) for r in rows], bins=bins)
        if ece is not None
        else None
    )

    mistakes: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        p, t = row[0], row[1]
        if p != t:
            mistakes.setdefault((t, p or NONE), []).append(row)
    ranked = sorted(mistakes.items(), key=lambda kv: (-cost(kv[1]), -len(kv[1]), kv[0]))
    return QualityReport(
        workloads=len(rows),
        cost=cost(rows),
        auto_cost=cost(auto),
        total_weight=total,
        auto_weight=auto_weight,
        coverage=_ratio(auto_weight, total),
        accuracy_auto=_ratio(right(auto), auto_weight),
        accuracy_all=_ratio(right(rows), total),
        accuracy_by_count=_ratio(sum(p == t for p, t, _, _ in rows), len(rows)),
        mean_confidence=_ratio(math.fsum(c * float(w) for _, _, c, w in rows), total),
        ece=ece,
        ece_if_calibrated=band[0] if band else None,
        ece_if_calibrated_p90=band[1] if band else None,
        reliability=tuple(table),
        confusions=tuple(
            Confusion(t, p, len(part), cost(part), cost([r for r in part if is_auto(r)]))
            for (t, p), part in ranked[:CONFUSIONS]
        ),
    )


def quality_rows(
    report: QualityReport, *, group: str = "holdout", key: str = "all", details: bool = True
) -> list[dict[str, Any]]:
    """The report as the rows of ``rpt_attribution_quality``'s groups ``group`` (one summary row
    keyed ``key``) and, with ``details``, ``reliability`` (one per bin holding a workload) and
    ``confusion`` (ranked); the mart adds the ``untagged`` group and casts. A column a group does
    not define is None. The team level is a second report: ``group="team_holdout"``,
    ``details=False``."""
    empty = dict.fromkeys(
        (
            "true_project_id",
            "predicted_project_id",
            "confidence_bin_low",
            "confidence_bin_high",
            "coverage",
            "accuracy",
            "accuracy_all",
            "accuracy_by_count",
            "mean_confidence",
            "expected_calibration_error",
            "ece_if_calibrated",
            "ece_if_calibrated_p90",
        )
    )
    rows: list[dict[str, Any]] = [
        empty
        | {
            "metric_group": group,
            "metric_key": key,
            "workload_count": report.workloads,
            "effective_cost": report.cost,
            "auto_effective_cost": report.auto_cost,
            "coverage": report.coverage,
            "accuracy": report.accuracy_auto,
            "accuracy_all": report.accuracy_all,
            "accuracy_by_count": report.accuracy_by_count,
            "mean_confidence": report.mean_confidence,
            "expected_calibration_error": report.ece,
            "ece_if_calibrated": report.ece_if_calibrated,
            "ece_if_calibrated_p90": report.ece_if_calibrated_p90,
        }
    ]
    if not details:
        return rows
    for b in report.reliability:
        rows.append(
            empty
            | {
                "metric_group": "reliability",
                "metric_key": f"bin_{b.index}",
                "confidence_bin_low": b.low,
                "confidence_bin_high": b.high,
                "workload_count": b.workloads,
                "effective_cost": b.cost,
                "auto_effective_cost": b.auto_cost,
                "accuracy": b.accuracy,
                "accuracy_by_count": b.accuracy_by_count,
                "mean_confidence": b.mean_confidence,
                "expected_calibration_error": b.calibration_error,
            }
        )
    for rank, c in enumerate(report.confusions, start=1):
        rows.append(
            empty
            | {
                "metric_group": "confusion",
                "metric_key": f"rank_{rank}",
                "true_project_id": c.true_project_id,
                "predicted_project_id": None
                if c.predicted_project_id == NONE
                else c.predicted_project_id,
                "workload_count": c.workloads,
                "effective_cost": c.cost,
                "auto_effective_cost": c.auto_cost,
            }
        )
    return rows


ClassRow = tuple[str, float, Decimal | float]  # (support class, confidence, weight) of a target


def support_class_rows(
    targets: Iterable[ClassRow],
    held: Iterable[tuple[str, str | None, str, float, Decimal | float]],
    *,
    threshold: float | None,
    classes: Sequence[str],
) -> list[dict[str, Any]]:
    """One ``support_class`` row per class: the workloads to score in it (count, cost, the part
    at or above ``threshold``, coverage), the **estimated** accuracy of that part (its weighted
    mean calibrated confidence: what the build claims for it), and what the hold-out workloads of
    the class measure (``held``: (class, predicted, true, confidence, weight) of both hold-outs):
    ``accuracy_all`` their accuracy at the threshold, ``expected_calibration_error`` their ECE
    (with the band a perfectly calibrated model would show on them)."""
    targets, held = list(targets), list(held)
    rows = []
    for name in classes:
        mine = [(c, w) for k, c, w in targets if k == name]
        placed = [(c, w) for c, w in mine if threshold is not None and c >= threshold]
        total = math.fsum(float(w) for _, w in mine)
        placed_weight = math.fsum(float(w) for _, w in placed)
        measured = evaluate(
            [(p, t, c, w) for k, p, t, c, w in held if k == name], threshold=threshold
        )
        rows.append(
            {
                "metric_group": "support_class",
                "metric_key": name,
                "true_project_id": None,
                "predicted_project_id": None,
                "confidence_bin_low": None,
                "confidence_bin_high": None,
                "workload_count": len(mine),
                "effective_cost": sum((w for _, w in mine), Decimal(0)),
                "auto_effective_cost": sum((w for _, w in placed), Decimal(0)),
                "coverage": _ratio(placed_weight, total),
                "accuracy": _ratio(math.fsum(c * float(w) for c, w in placed), placed_weight),
                "accuracy_all": measured.accuracy_auto,
                "accuracy_by_count": None,
                "mean_confidence": _ratio(math.fsum(c * float(w) for c, w in mine), total),
                "expected_calibration_error": measured.ece,
                "ece_if_calibrated": measured.ece_if_calibrated,
                "ece_if_calibrated_p90": measured.ece_if_calibrated_p90,
            }
        )
    return rows


def cold_start_rows(
    measured: Mapping[str, tuple[float | None, int | None]],
    placed: Iterable[tuple[str, Decimal | float]],
) -> list[dict[str, Any]]:
    """The declared-names path on its own, one ``cold_start`` row per level (keys
    ``declared_project``, ``declared_team``, ``declared_name``):
    what it measured on the labelled workloads (``measured``: level -> (precision, matched), the
    ``accuracy`` and ``workload_count``) and the untagged cost it placed (``placed``: (level,
    weight) of each workload it placed, ``auto_effective_cost``)."""
    placed = list(placed)
    rows = []
    for level in LEVELS:
        precision, matched = measured.get(level, (None, None))
        mine = [w for k, w in placed if k == level]
        rows.append(
            {
                "metric_group": "cold_start",
                "metric_key": f"declared_{level}",
                "true_project_id": None,
                "predicted_project_id": None,
                "confidence_bin_low": None,
                "confidence_bin_high": None,
                "workload_count": matched or 0,
                "effective_cost": Decimal(0),
                "auto_effective_cost": sum(mine, Decimal(0)),
                "coverage": None,
                "accuracy": precision,
                "accuracy_all": None,
                "accuracy_by_count": None,
                "mean_confidence": None,
                "expected_calibration_error": None,
                "ece_if_calibrated": None,
                "ece_if_calibrated_p90": None,
            }
        )
    return rows
