"""Validation shaped like untagged work: support classes and a hold-out of whole people.

Tagging is a habit of people and teams: the workloads nobody tagged are often those of a person (or
a namespace) with no labelled history at all, and a time-based hold-out of tagged work does not look
like them. So every workload gets a **support class**, from what the model can know about it:

* ``user_history``: its user (on its cluster) has labelled workloads other than itself;
* ``namespace_history``: not its user, but its namespace has;
* ``launch_signals``: neither; only what the workload itself says (names, image, launch line).

and a second hold-out withholds **whole people and namespaces** (:func:`withheld_groups`): every
label of the drawn people and namespaces is hidden from a model trained on the rest, so their
workloads are scored as a never-tagging person's would be. Each class that is not ``user_history``
gets its own calibration map (:class:`ClassCalibration`), fitted on that class's workloads of both
hold-outs; a workload to score is calibrated by its class's map, so the threshold and the expected
accuracy come from workloads that look like it, not from the tagged hold-out alone.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpucost.core.attribution.calibration import CAL_MIN, TopLabelCalibrator

SUPPORT_CLASSES = ("user_history", "namespace_history", "launch_signals")


def _cluster(record: Mapping[str, Any]) -> str:
    return str(record.get("cluster_id") or "")


def support_classes(
    records: Sequence[Mapping[str, Any]],
    readers: Mapping[str, str | None],
    filed_under: Mapping[str, str | None],
    known: Mapping[str, str],
) -> dict[str, str]:
    """Each record's support class. ``readers``: the user whose history a workload reads;
    ``filed_under``: the user a labelled workload's label is filed under; ``known``: workload ->
    project of the labels the model may read. A workload's own label never counts for itself."""
    users: Counter[tuple[str, str]] = Counter()
    spaces: Counter[tuple[str, str]] = Counter()
    by_id = {str(r["workload_id"]): r for r in records}
    for wid in known:
        r = by_id.get(wid)
        if r is None:
            continue
        if filed_under.get(wid):
            users[(_cluster(r), str(filed_under[wid]))] += 1
        spaces[(_cluster(r), str(r.get("namespace") or ""))] += 1
    out = {}
    for wid, r in by_id.items():
        own = wid in known
        user = readers.get(wid)
        user_key = (_cluster(r), str(user))
        space_key = (_cluster(r), str(r.get("namespace") or ""))
        own_user = own and filed_under.get(wid) is not None and str(filed_under[wid]) == str(user)
        if user and users[user_key] - own_user > 0:
            out[wid] = "user_history"
        elif spaces[space_key] - own > 0:
            out[wid] = "namespace_history"
        else:
            out[wid] = "launch_signals"
    return out


def _draw(seed: int, key: tuple[str, ...]) -> float:
    return random.Random("/".join((str(seed), *key))).random()


def withheld_groups(
    records: Sequence[Mapping[str, Any]],
    filed_under: Mapping[str, str | None],
    *,
    seed: int,
    people: float = 0.2,
    namespaces: float = 0.1,
) -> set[str]:
    """The workloads of the withheld people (a ``people`` share of the users, per cluster) and
    namespaces (a ``namespaces`` share), drawn by a seeded hash of the name: the same on every
    build. ``records``: the labelled workloads the draw may take from."""
    out = set()
    for r in records:
        wid = str(r["workload_id"])
        user = filed_under.get(wid)
        space = str(r.get("namespace") or "")
        if (user and _draw(seed, ("user", _cluster(r), str(user))) < people) or _draw(
            seed, ("namespace", _cluster(r), space)
        ) < namespaces:
            out.add(wid)
    return out


@dataclass(frozen=True)
class Evaluated:
    """Hold-out workloads of one level (project or team): raw top probability, right?, weight and
    support class of each."""

    top: np.ndarray
    correct: np.ndarray
    weight: np.ndarray
    classes: tuple[str, ...]

    def of(self, wanted: set[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keep = np.array([c in wanted for c in self.classes], dtype=bool)
        return self.top[keep], self.correct[keep], self.weight[keep]


class ClassCalibration:
    """One calibration map per support class that is not ``user_history``, fitted on that class's
    hold-out workloads (both hold-outs); a class with fewer than ``CAL_MIN`` of them shares the map
    of the classes without user history pooled, and with fewer still keeps the model's own map
    (``None``: the caller's default)."""

    def __init__(self, evaluated: Evaluated) -> None:
        unsupported = {"namespace_history", "launch_signals"}
        pooled = evaluated.of(unsupported)
        shared = TopLabelCalibrator(*pooled) if len(pooled[0]) >= CAL_MIN else None
        self.maps: dict[str, TopLabelCalibrator | None] = {"user_history": None}
        for name in sorted(unsupported):
            own = evaluated.of({name})
            self.maps[name] = TopLabelCalibrator(*own) if len(own[0]) >= CAL_MIN else shared

    @classmethod
    def of(cls, maps: dict[str, TopLabelCalibrator | None]) -> ClassCalibration:
        """Fitted maps from their parameters (a stored model version's)."""
        out = cls.__new__(cls)
        out.maps = dict(maps)
        return out

    def for_classes(self, classes: Sequence[str]) -> list[TopLabelCalibrator | None]:
        return [self.maps.get(c) for c in classes]


def cross_fitted(
    evaluated: Evaluated, default: TopLabelCalibrator | None, folds: int = 5
) -> np.ndarray:
    """Calibrated confidences of hold-out workloads, each from a :class:`ClassCalibration` fitted
    without its fold (interleaved): what an honest report of the class maps may show. Workloads of
    ``user_history`` (or a class without a map of its own) take ``default``'s, else their raw."""
    n = len(evaluated.top)
    out = np.empty(n)
    fold = np.arange(n) % folds
    for k in range(folds):
        rest = fold != k
        part = ClassCalibration(
            Evaluated(
                evaluated.top[rest],
                evaluated.correct[rest],
                evaluated.weight[rest],
                tuple(c for c, r in zip(evaluated.classes, rest, strict=True) if r),
            )
        )
        maps = part.for_classes([evaluated.classes[i] for i in np.flatnonzero(~rest)])
        for i, cal in zip(np.flatnonzero(~rest), maps, strict=True):
            use = cal or default
            out[i] = use.predict(evaluated.top[i : i + 1])[0] if use else evaluated.top[i]
    return out
