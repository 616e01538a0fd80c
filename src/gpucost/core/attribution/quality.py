"""Attribution quality, defined once: money-weighted coverage above a threshold, accuracy, the
reliability table, expected calibration error and the costliest confusions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpucost.core.attribution.features import NONE


@dataclass(frozen=True)
class QualityReport:
    """Money-weighted quality of predictions against the truth."""

    workloads: int
    total_weight: float
    auto_weight: float
    coverage: float  # share of the weight with confidence >= threshold
    accuracy_auto: float  # money-weighted accuracy of the auto-attributed part
    accuracy_all: float  # money-weighted accuracy of the top candidate, all workloads
    ece: float  # expected calibration error (money-weighted, equal-width bins)
    reliability: tuple[tuple[float, float, int, float, float, float], ...]
    # (bin low, bin high, workloads, weight, mean confidence, accuracy)
    confusions: tuple[tuple[str, str, int, float], ...]  # (true, predicted, workloads, weight)


def evaluate(
    rows: Iterable[tuple[str | None, str, float, float]],
    *,
    threshold: float,
    bins: int = 10,
) -> QualityReport:
    """Quality of (predicted, true, confidence, weight) rows: coverage above ``threshold``,
    money-weighted accuracy, reliability table, expected calibration error and top confusions.

    ECE = sum over bins of (bin weight / total weight) * |accuracy - mean confidence|.
    """
    rows = list(rows)
    total = sum(w for *_, w in rows)
    auto = [(p, t, c, w) for p, t, c, w in rows if c >= threshold]
    auto_w = sum(w for *_, w in auto)

    def acc(part: list) -> float:
        weight = sum(w for *_, w in part)
        return sum(w for p, t, _, w in part if p == t) / weight if weight else 0.0

    table = []
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        part = [r for r in rows if lo <= r[2] < hi or (b == bins - 1 and r[2] >= hi)]
        if not part:
            continue
        weight = sum(w for *_, w in part)
        conf = sum(c * w for _, _, c, w in part) / weight if weight else 0.0
        accuracy = acc(part)
        table.append((lo, hi, len(part), weight, conf, accuracy))
        if total:
            ece += weight / total * abs(accuracy - conf)
    confused: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for p, t, _, w in rows:
        if p != t:
            confused[(t, p or NONE)][0] += 1
            confused[(t, p or NONE)][1] += w
    top = sorted(confused.items(), key=lambda kv: (-kv[1][1], kv[0]))[:5]
    return QualityReport(
        workloads=len(rows),
        total_weight=total,
        auto_weight=auto_w,
        coverage=auto_w / total if total else 0.0,
        accuracy_auto=acc(auto),
        accuracy_all=acc(rows),
        ece=ece,
        reliability=tuple(table),
        confusions=tuple((t, p, int(n), w) for (t, p), (n, w) in top),
    )
