"""The features of one workload: code fingerprints (image, names, launch line, paths), resource
patterns, and its known neighbours on both sides in time (never its own label); the masking that
shows labelled workloads to the model as the targets look."""

from __future__ import annotations

import difflib
import itertools
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

NONE = "__none__"


_SPLIT = re.compile(r"[^a-z0-9]+")


# random suffixes (k8s pod hashes, job ids): 5+ characters mixing letters and digits, or numbers
_NOISE = re.compile(r"^(?=.*\d)[a-z0-9]{5,}$|^\d+$")


_DIGITS = re.compile(r"\d+")


PIPELINE_GAP_SECONDS = 2 * 3600


def known_projects(
    records: Iterable[Mapping[str, Any]], mapping: Iterable[Mapping[str, Any]]
) -> list[str]:
    """The projects a prediction may name: the org mapping's, else the known ones seen in labels."""
    known = sorted({row["project_id"] for row in mapping if row.get("project_id")})
    return known or sorted({r["known_project_id"] for r in records if r.get("known_project_id")})


def project_teams(
    records: Iterable[Mapping[str, Any]], mapping: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """Each project's team: the org mapping's; a project it does not list (or every project, when
    no mapping is landed) takes the team label its labelled workloads carry most often (ties: the
    first in sorted order). A project with neither has no team."""
    teams = {
        str(row["project_id"]): str(row["team_id"])
        for row in mapping
        if row.get("project_id") and row.get("team_id")
    }
    seen: dict[str, Counter[str]] = {}
    for r in records:
        project, team = r.get("known_project_id"), r.get("team_label")
        if project and team and str(project) not in teams:
            seen.setdefault(str(project), Counter())[str(team)] += 1
    for project, counts in seen.items():
        teams[project] = min(counts, key=lambda t: (-counts[t], t))
    return teams


def name_parts(text: str | None) -> list[str]:
    """A name's lower-case parts, random suffixes included: ``rag-search-7f9c2`` -> rag, search,
    7f9c2."""
    return [p for p in _SPLIT.split((text or "").lower()) if p]


def is_noise(part: str) -> bool:
    """Whether a name part looks random (a pod hash, a job number): it names nothing."""
    return bool(_NOISE.match(part))


def tokens(*texts: str | None) -> list[str]:
    """Lower-case name tokens and adjacent bigrams, random suffixes dropped.

    ``tokens("rag-search-ft-8f3a2-x7k2p")`` -> rag, search, ft, rag-search, search-ft.
    """
    out: list[str] = []
    for text in texts:
        if not text:
            continue
        parts = [p for p in _SPLIT.split(text.lower()) if p and not _NOISE.match(p)]
        out.extend(parts)
        out.extend(f"{a}-{b}" for a, b in itertools.pairwise(parts))
    return out


def _tag_family(tag: str | None) -> str:
    """``24.05-py3`` -> ``N.N-pyN``: the shape of a tag, not its version."""
    return _DIGITS.sub("N", tag) if tag else NONE


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def static_features(record: Mapping[str, Any], known_projects: Sequence[str]) -> dict[str, float]:
    """The workload's own signals (code fingerprints, resource pattern, time) as a feature dict."""
    f: dict[str, float] = {}

    def cat(name: str, value: Any) -> None:
        f[f"{name}={value if value not in (None, '') else NONE}"] = 1.0

    cat("ns", record.get("namespace"))
    cat("user", record.get("user_id"))
    cat("team", record.get("team_label"))
    cat("app", record.get("label_app"))
    cat("owner_kind", record.get("created_by_kind"))
    cat("img", record.get("image_repository"))
    cat("img_tag", f"{record.get('image_repository')}:{_tag_family(record.get('image_tag'))}")
    if record.get("image_digest"):
        cat("digest", record.get("image_digest"))
    cat("gpus", record.get("gpu_count"))
    cat("gpu_model", record.get("gpu_model"))
    for tok in tokens(record.get("pod"), record.get("created_by_name"), record.get("label_app")):
        f[f"tok={tok}"] = 1.0
    for tok in tokens(record.get("image_repository")):
        f[f"img_tok={tok}"] = 1.0
    # how the work was launched: a container's command + args or a Slurm SubmitLine (script, config,
    # data and checkpoint paths), its working directory, the volume claims it mounts
    launch = {
        "cmd": tokens(record.get("command_line")),
        "dir": tokens(record.get("working_dir")),
        "vol": tokens(record.get("volume_claims")),
    }
    for tok in launch["cmd"]:
        f[f"cmd={tok}"] = 1.0
    # whole path segments (a dataset, a bucket, a config), not only their words: two datasets
    # named web-pool and code-pool share the word pool, not the data; segments with a random part
    # (a run's own name) say nothing another workload can learn from
    for seg in references(record):
        if not any(_NOISE.match(part) for part in _SPLIT.split(seg) if part):
            f[f"seg={seg}"] = 1.0
    for prefix in ("dir", "vol"):
        for tok in launch[prefix]:
            f[f"{prefix}={tok}"] = 1.0
    # the same words wherever the launch details name them: a dataset a job reads as
    # ``--data s3://datasets/clicks-archive/`` and a notebook mounts as ``clicks-archive-cache``
    # is one feature, so what the labelled jobs taught about it speaks for the notebook too
    for words in launch.values():
        for tok in words:
            f[f"word={tok}"] = 1.0
    if record.get("partition_name"):
        cat("partition", record.get("partition_name"))
    names = " ".join(
        str(record.get(k) or "")
        for k in (
            "pod",
            "created_by_name",
            "label_app",
            "image_repository",
            "command_line",
            "working_dir",
            "volume_claims",
        )
    ).lower()
    for project in known_projects:
        if project and project in names:
            f[f"mentions={project}"] = 1.0
    # an invalid project label is a signal, not a truth: its closest known project id (a valid label
    # is never a feature: it is the answer, reading it would leak into training and the hold-out)
    raw = (record.get("label_project_id") or "").strip().lower()
    if raw and raw not in known_projects:
        close = difflib.get_close_matches(raw, known_projects, n=1, cutoff=0.75)
        cat("label_close_to", close[0] if close else "?")
    started = _num(record.get("started_epoch"))
    if started is not None:
        cat("hour", int(started // 3600) % 24)
        cat("weekday", int(started // 86400 + 3) % 7)  # 1970-01-01 was a Thursday (3)
    duration = _num(record.get("duration_hours"))
    if duration is not None:
        f["log_duration_hours"] = math.log1p(max(duration, 0.0))
    for name in ("util_mean", "util_p95", "util_burstiness"):
        value = _num(record.get(name))
        if value is not None:
            f[name] = min(max(value, 0.0), 100.0) / 100.0 if name != "util_burstiness" else value
    return f


_PATH_PART = re.compile(r"[\s/=:,]+")


def references(record: Mapping[str, Any]) -> set[str]:
    """Path segments of the launch line and working directory: where a workload names another's
    output (``--model s3://.../exp-3fa2c/final`` names the training job exp-3fa2c)."""
    text = " ".join(str(record.get(k) or "") for k in ("command_line", "working_dir"))
    return {part for part in _PATH_PART.split(text.lower()) if part}


def _user_key(record: Mapping[str, Any], user: Any = None) -> str:
    """Whose history a workload continues: its user on its cluster (a person's work on one
    cluster is one stream of work; the same person on another cluster may be on other things)."""
    user = user if user is not None else record.get("user_id")
    if not user:
        return NONE
    return f"{record.get('cluster_id') or NONE}/{user}"


def _reader_key(record: Mapping[str, Any], reader_users: Mapping[str, str | None] | None) -> str:
    wid = str(record["workload_id"])
    if reader_users is None or wid not in reader_users:
        return _user_key(record)
    user = reader_users[wid]
    return _user_key(record, user) if user else NONE


def creator_user(record: Mapping[str, Any]) -> str | None:
    """The person who created the workload (``creator_user_id``: the user an admission webhook
    stamped on its pods, from the API request's user info), or None: no webhook, or a service
    account (``system:serviceaccount:<ns>:<name>``), which names nobody. Unlike the user label it
    does not come and go with the project label: it is present on a cluster's pods or absent, tagged
    or not, so it is not masked like the user label."""
    creator = str(record.get("creator_user_id") or "").strip()
    return creator if creator and not creator.startswith("system:") else None


class UserInference:
    """The user of a workload without a user label, from the other workloads that share its owner
    (a notebook server's StatefulSet ``jupyter-alice``, in its namespace) or mount the same volume
    claim (``ws-alice``) and do carry one: where those name a single user, that is the user.

    Counts are kept per key, so a workload's own user label can be left out when it is the one
    asked about (a labelled workload shown without its user must not be told its user by itself).
    """

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        for r in records:
            user = r.get("user_id") or creator_user(r)
            if user:
                for key in self.keys(r):
                    self.counts[key][str(user)] += 1

    @staticmethod
    def keys(record: Mapping[str, Any]) -> list[str]:
        place = f"{record.get('cluster_id') or NONE}/{record.get('namespace') or NONE}"
        out = []
        owner = str(record.get("created_by_name") or "").lower()  # the exact owner, not its family
        if owner:
            out.append(f"{place}/owner={owner}")
        out.extend(f"{place}/claim={c}" for c in str(record.get("volume_claims") or "").split())
        return out

    def user_for(self, record: Mapping[str, Any], own: str | None = None) -> str | None:
        """The single user the record's owner and claims point to (``own``: its own user label,
        not counted), else None."""
        found: set[str] = set()
        for key in self.keys(record):  # the owner first: a claim may be shared (a dataset cache)
            counts = self.counts.get(key)
            users = {u for u, n in (counts or {}).items() if n - (1 if u == own else 0) > 0}
            if len(users) == 1:
                if "/owner=" in key:
                    return users.pop()
                found |= users
        return found.pop() if len(found) == 1 else None


def _family(record: Mapping[str, Any]) -> str:
    """The job family: the owner name (job, replica set, stateful set) without random suffixes."""
    toks = [t for t in _SPLIT.split(str(record.get("created_by_name") or "").lower()) if t]
    return "-".join(t for t in toks if not _NOISE.match(t)) or NONE


def history_features(
    records: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None = None,
) -> dict[str, dict[str, float]]:
    """Temporal and behavioural features per workload, from the known projects of its neighbours
    on both sides in time: never its own.

    ``labels`` maps workload_id -> known project for the workloads whose label may be read.
    A workload's earlier side (:func:`earlier_features`) reads only workloads that started
    strictly earlier, its later side (:func:`later_features`) only those that started strictly
    later, so no workload sees its own label. A label is filed under its record's user;
    ``reader_users`` (workload_id -> user or None) says under which user a workload *reads*
    history, when that differs (a labelled workload shown without its user label, as the workloads
    to score often are).
    """
    order = start_order(records)
    earlier = earlier_features(order, labels, reader_users)
    later = later_features(order, labels, reader_users)
    return {wid: {**f, **later[wid]} for wid, f in earlier.items()}


def start_order(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(
        records, key=lambda r: (_num(r.get("started_epoch")) or 0.0, str(r["workload_id"]))
    )


def earlier_features(
    order: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None,
) -> dict[str, dict[str, float]]:
    """The earlier side (``*_prev``, ``*_mix``, ``pipeline_prev``, ``reads_prev``): ``order`` (the
    records in start order) is walked forwards, a workload's features computed *before* any label
    of a workload starting at the same second or later is added."""
    user_mix: dict[str, Counter[str]] = defaultdict(Counter)
    ns_mix: dict[str, Counter[str]] = defaultdict(Counter)
    user_last: dict[str, str] = {}
    ns_last: dict[str, str] = {}
    family_last: dict[str, str] = {}
    user_ended: dict[str, tuple[float, str]] = {}
    owner_project: dict[str, str] = {}  # exact job / owner name -> its project
    out: dict[str, dict[str, float]] = {}
    pending: list[Mapping[str, Any]] = []
    pending_start: float | None = None

    def commit() -> None:
        for r in pending:
            project = labels.get(str(r["workload_id"]))
            if project is None:
                continue
            user, ns = _user_key(r), r.get("namespace") or NONE
            user_mix[user][project] += 1
            ns_mix[ns][project] += 1
            user_last[user] = project
            ns_last[ns] = project
            family_last[_family(r)] = project
            if r.get("created_by_name"):
                owner_project[str(r["created_by_name"]).lower()] = project
            start = _num(r.get("started_epoch")) or 0.0
            end = start + 3600.0 * (_num(r.get("duration_hours")) or 0.0)
            if end >= user_ended.get(user, (-math.inf, ""))[0]:
                user_ended[user] = (end, project)
        pending.clear()

    for r in order:
        start = _num(r.get("started_epoch")) or 0.0
        if pending_start is None or start > pending_start:
            commit()
            pending_start = start
        user, ns = _reader_key(r, reader_users), r.get("namespace") or NONE
        f: dict[str, float] = {}
        # without a user there is no user history (service accounts, pods without a user label)
        mixes = [("ns_mix", ns_mix[ns])] + ([("user_mix", user_mix[user])] if user != NONE else [])
        for prefix, mix in mixes:
            total = sum(mix.values())
            for project, n in mix.items():
                f[f"{prefix}={project}"] = n / total
        f.update(_nearest("prev", r, user, ns, (user_last, ns_last, family_last)))
        ended = user_ended.get(user) if user != NONE else None
        if ended is not None and 0 <= start - ended[0] <= PIPELINE_GAP_SECONDS:
            f[f"pipeline_prev={ended[1]}"] = 1.0
        # lineage: the project of an earlier labelled job whose name this one's paths mention
        for ref in sorted(references(r) & owner_project.keys()):
            if ref != str(r.get("created_by_name") or "").lower():
                f[f"reads_prev={owner_project[ref]}"] = 1.0
        out[str(r["workload_id"])] = f
        pending.append(r)
    return out


def _nearest(
    side: str,
    record: Mapping[str, Any],
    user: str,
    ns: str,
    known: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]],
) -> dict[str, float]:
    """``user_<side>=``, ``ns_<side>=``, ``family_<side>=``: the project of the nearest known
    workload of the same user (none without a user), namespace and job family on that side."""
    by_user, by_ns, by_family = known
    f: dict[str, float] = {}
    if user != NONE and user in by_user:
        f[f"user_{side}={by_user[user]}"] = 1.0
    if ns in by_ns:
        f[f"ns_{side}={by_ns[ns]}"] = 1.0
    family = _family(record)
    if family in by_family:
        f[f"family_{side}={by_family[family]}"] = 1.0
    return f


def later_features(
    order: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str],
    reader_users: Mapping[str, str | None] | None,
) -> dict[str, dict[str, float]]:
    """The other side of a workload's neighbours: the project of the same user's, namespace's and
    job family's *next* known workload, and of the known workloads that later read this one's
    output (``read_by``: their paths name its owner, as an evaluation names the training job whose
    checkpoint it loads). A month is scored when it is over, so a Monday's untagged job can learn
    from the labelled job its user started on Tuesday. ``order``: the records in start order,
    walked backwards; only workloads starting strictly later are read."""
    user_next: dict[str, str] = {}
    ns_next: dict[str, str] = {}
    family_next: dict[str, str] = {}
    read_by: dict[str, set[str]] = defaultdict(set)  # a path segment -> projects of its readers
    out: dict[str, dict[str, float]] = {}
    pending: list[Mapping[str, Any]] = []
    pending_start: float | None = None
    for r in reversed(order):
        start = _num(r.get("started_epoch")) or 0.0
        if pending_start is None or start < pending_start:
            for done in pending:
                project = labels.get(str(done["workload_id"]))
                if project is not None:
                    user_next[_user_key(done)] = project
                    ns_next[done.get("namespace") or NONE] = project
                    family_next[_family(done)] = project
                    for ref in references(done):
                        read_by[ref].add(project)
            pending.clear()
            pending_start = start
        user, ns = _reader_key(r, reader_users), r.get("namespace") or NONE
        f = _nearest("next", r, user, ns, (user_next, ns_next, family_next))
        owner = str(r.get("created_by_name") or "").lower()
        for project in sorted(read_by.get(owner, ())) if owner else ():
            f[f"read_by={project}"] = 1.0
        out[str(r["workload_id"])] = f
        pending.append(r)
    return out


def gpu_hours(record: Mapping[str, Any]) -> float:
    """GPU-hours of a workload (its size: what its money roughly scales with), at least a little."""
    gpus = _num(record.get("gpu_count")) or 1.0
    hours = _num(record.get("duration_hours")) or 0.0
    return max(gpus * max(hours, 0.0), 1e-3)


def _has(record: Mapping[str, Any], key: str) -> bool:
    return bool(record.get(key))


def label_patterns(targets: Sequence[Mapping[str, Any]]) -> list[tuple[tuple[bool, bool], float]]:
    """How often the workloads to score carry a user and a team label: ((user?, team?), share)."""
    counts = Counter((_has(r, "user_id"), _has(r, "team_label")) for r in targets)
    total = sum(counts.values())
    return sorted(((k, n / total) for k, n in counts.items()), reverse=True) if total else []


def mask_draw(
    record: Mapping[str, Any],
    patterns: Sequence[tuple[tuple[bool, bool], float]],
    seed: int,
) -> tuple[bool, bool]:
    """Whether a labelled workload is shown to the model with its user and its team label:
    (user?, team?) drawn with the shares the workloads to score carry them (``label_patterns``).

    Untagged pods often lack the user or team label that tagged ones carry; a model trained and
    calibrated on complete rows would lean on features it will not see. The draw is a hash of the
    seed and workload id: the same workload is masked the same way on every build."""
    if not patterns:
        return True, True
    draw = random.Random(f"{seed}/{record['workload_id']}").random()
    acc = 0.0
    for (u, t), share in patterns:
        acc += share
        if draw < acc:
            return u, t
    return True, True


def start_epoch(record: Mapping[str, Any]) -> float:
    return _num(record.get("started_epoch")) or 0.0


def trailing_labelled(
    records: Sequence[Mapping[str, Any]], labels: Mapping[str, str], days: float | None
) -> list[Mapping[str, Any]]:
    labelled = sorted(
        (r for r in records if str(r["workload_id"]) in labels),
        key=lambda r: (start_epoch(r), str(r["workload_id"])),
    )
    if not days or not labelled:
        return labelled
    latest = max(start_epoch(r) for r in records)
    return [r for r in labelled if start_epoch(r) >= latest - days * 86400]
