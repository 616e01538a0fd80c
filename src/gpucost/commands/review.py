"""``gpucost review``: the attribution review queue from a terminal, and the one function that
records a decision (the dashboard's review page calls the same :func:`record_decision`).

    gpucost review list [--warehouse W | --parquet DIR] [--limit N]
    gpucost review accept ITEM [--candidate N] --why TEXT [--by NAME] [--force]
    gpucost review reassign ITEM PROJECT --why TEXT [--by NAME] [--force]
    gpucost review reject ITEM --why TEXT [--by NAME] [--force]

ITEM is an item's rank in the queue (``rpt_attribution_review.review_rank``, as ``list`` prints it)
or its workload id. Each decision appends one row to the overrides file (``--overrides``, else
``$GPUCOST_OVERRIDES``, else the project's ``seeds/attribution_overrides.csv``): an override of
``workload_id`` matching the workload id as an anchored RE2 literal (:func:`workload_pattern`), the
project (accept: the candidate's; reassign: PROJECT, which must be a project of the org mapping;
reject: empty, "not the suggested project, owner unknown"), who (``--by``, default the OS user),
when (today, UTC) and why (``--why``, required). The next build reads it: the workload's owner and a
training label, or for a rejection an explicit unallocated row with the reason
``rejected_in_review`` (``int_workload_owners_declared``). Cells are written by the csv module
through the project's CSV-injection guard (:func:`gpucost.commands.safe_output.csv_row`). A second
decision for a workload that already has one is refused unless ``--force``; then the latest wins.
"""

from __future__ import annotations

import argparse
import csv
import getpass
import hashlib
import io
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpucost.commands import dashboard_detail as detail
from gpucost.commands.dashboard_data import Filters, fmt_money, has_table
from gpucost.commands.project import find_project_dir, resolve_path, warehouse_path
from gpucost.commands.safe_output import csv_row

OVERRIDES_ENV = "GPUCOST_OVERRIDES"
OVERRIDES_SEED = Path("seeds") / "attribution_overrides.csv"
OVERRIDE_COLUMNS = (
    "override_id",
    "match_field",
    "match_pattern",
    "project_id",
    "decided_by",
    "decided_at",
    "reason",
)
ACTIONS = ("accept", "reassign", "reject", "confirm")
"""What a decision does; ``confirm``: a rejected suspected mislabel (an override naming its tag)."""
REVIEW_TABLE = "rpt_attribution_review"
PROJECTS_TABLE = "dim_projects"
HANDOVERS_TABLE = "rpt_team_handovers"
_RE2_SPECIAL = re.compile(r"([\\.^$*+?()\[\]{}|])")


class ReviewError(ValueError):
    """A reviewer's mistake (an unknown item or project, no reason, a duplicate decision): one
    line for the terminal or the page, never a traceback."""


def re2_literal(text: str) -> str:
    """``text`` as a regular expression matching exactly itself: every RE2 metacharacter
    (``\\ . ^ $ * + ? ( ) [ ] { } |``) escaped with a backslash (Java's regex, Spark's, reads
    it the same)."""
    return _RE2_SPECIAL.sub(r"\\\1", text)


def workload_pattern(workload_id: str) -> str:
    """The override pattern that matches one workload id and nothing else: ``^<literal>$``."""
    return f"^{re2_literal(workload_id)}$"


def overrides_path(override: str | Path | None = None, project_dir: Path | None = None) -> Path:
    """The overrides file a decision goes to: ``override``, else ``$GPUCOST_OVERRIDES``, else the
    project's ``seeds/attribution_overrides.csv`` (the seed the next build reads)."""
    value = override or os.environ.get(OVERRIDES_ENV)
    if value:
        return Path(value).expanduser()
    return (project_dir or find_project_dir()) / OVERRIDES_SEED


def default_reviewer() -> str:
    """The OS user, as ``--by`` defaults to it."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


@dataclass(frozen=True)
class Decision:
    """A reviewer's decision on one workload: ``project_id`` None is a rejection."""

    workload_id: str
    action: str
    project_id: str | None
    decided_by: str
    reason: str


def read_overrides(path: Path) -> list[dict[str, str]]:
    """The rows of an overrides file (no file: none)."""
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def decisions_for(path: Path, workload_id: str) -> list[dict[str, str]]:
    """The rows of the overrides file that decide exactly this workload (its anchored literal)."""
    pattern = workload_pattern(workload_id)
    return [
        row
        for row in read_overrides(path)
        if row.get("match_field") == "workload_id" and row.get("match_pattern") == pattern
    ]


def override_id(workload_id: str, now: datetime) -> str:
    """``review-<UTC yyyymmdd-hhmmss>-<8 hex of the workload id>``: unique per decision, and a
    later decision of one day sorts after an earlier one (the latest wins)."""
    digest = hashlib.md5(workload_id.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"review-{now:%Y%m%d-%H%M%S}-{digest}"


def record_decision(
    path: Path,
    decision: Decision,
    *,
    force: bool = False,
    now: datetime | None = None,
) -> dict[str, str]:
    """Append the decision's override row to ``path`` and return it (column -> cell as written).

    Refuses (ReviewError) a decision without who or why, an action that is not one of ACTIONS, a
    rejection naming a project or a placement naming none, and a second decision for a workload
    the file already decides unless ``force``. The file gets its header when new; its existing
    rows are never rewritten. Every cell goes through the CSV-injection guard."""
    if decision.action not in ACTIONS:
        raise ReviewError(f"unknown decision {decision.action!r}: one of {', '.join(ACTIONS)}")
    if (decision.action == "reject") != (decision.project_id is None):
        raise ReviewError("a rejection names no project; an accept or a reassign names one")
    who = " ".join(decision.decided_by.split())
    why = " ".join(decision.reason.split())
    if not who:
        raise ReviewError("say who decides (--by NAME)")
    if not why:
        raise ReviewError("say why (--why TEXT): the reason is kept with the override")
    if not decision.workload_id:
        raise ReviewError("no workload to decide on")
    earlier = decisions_for(path, decision.workload_id)
    if earlier and not force:
        last = earlier[-1]
        verdict = f"project {last.get('project_id')}" if last.get("project_id") else "rejected"
        raise ReviewError(
            f"workload {decision.workload_id} already has a decision ({last.get('override_id')}: "
            f"{verdict}, by {last.get('decided_by')} on {last.get('decided_at')}); pass --force "
            "to record another (the latest wins)"
        )
    now = (now or datetime.now(UTC)).astimezone(UTC)
    taken = {row.get("override_id") for row in read_overrides(path)}
    identifier = override_id(decision.workload_id, now)
    suffix = 1
    while identifier in taken:
        suffix += 1
        identifier = f"{override_id(decision.workload_id, now)}-{suffix}"
    row = {
        "override_id": identifier,
        "match_field": "workload_id",
        "match_pattern": workload_pattern(decision.workload_id),
        "project_id": decision.project_id or "",
        "decided_by": who,
        "decided_at": now.date().isoformat(),
        "reason": why,
    }
    written = dict(zip(OVERRIDE_COLUMNS, csv_row(row.values()), strict=True))
    _append(path, written)
    return written


def _append(path: Path, row: dict[str, str]) -> None:
    header = None
    if path.is_file() and path.stat().st_size:
        with path.open(newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), None)
        if header is not None and sorted(header) != sorted(OVERRIDE_COLUMNS):
            raise ReviewError(
                f"{path.name} does not have the overrides columns ({', '.join(OVERRIDE_COLUMNS)})"
            )
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if header is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        writer.writerow(OVERRIDE_COLUMNS)
        header = list(OVERRIDE_COLUMNS)
    writer.writerow([row[column] for column in header])
    text = buffer.getvalue()
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as existing:
            existing.seek(-1, os.SEEK_END)
            if existing.read(1) != b"\n":
                text = "\n" + text  # a last row without its line end stays a row of its own
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write(text)


# --- the queue: from the warehouse or the published Parquet -----------------------------------


def open_queue(warehouse: Path | None = None, parquet: Path | None = None):
    """A DuckDB connection where ``rpt_attribution_review`` (and ``dim_projects`` and
    ``rpt_team_handovers``, when there)
    read unqualified: the published Parquet files (copied into memory) or the warehouse's marts
    (read only)."""
    if parquet is not None:
        review = parquet / f"{REVIEW_TABLE}.parquet"
        if not review.is_file():
            raise ReviewError(
                f"no {REVIEW_TABLE}.parquet in {parquet}: build and publish the marts "
                "(`gpucost build`, `gpucost publish`)"
            )
        con = duckdb.connect(":memory:")
        for name in (REVIEW_TABLE, PROJECTS_TABLE, HANDOVERS_TABLE):
            path = parquet / f"{name}.parquet"
            if path.is_file():
                con.execute(f"create table {name} as select * from read_parquet(?)", [str(path)])
        return con
    if warehouse is None or not warehouse.is_file():
        raise ReviewError(f"no warehouse at {warehouse}; run `gpucost build` first")
    con = duckdb.connect(str(warehouse), read_only=True)
    con.execute("set schema = 'marts'")
    if not has_table(con, REVIEW_TABLE):
        con.close()
        raise ReviewError(f"{warehouse} has no marts.{REVIEW_TABLE}; run `gpucost build`")
    return con


def find_item(items: Sequence[dict], item: str) -> dict:
    """The queue item named by its rank or its workload id (ReviewError when none)."""
    wanted = item.strip()
    for row in items:
        if row["workload_id"] in (item, wanted):
            return row
    for row in items:
        if wanted.isdigit() and row["review_rank"] == int(wanted):
            return row
    raise ReviewError(
        f"no item {item!r} in the review queue (give a rank from `gpucost review list` or a "
        "workload id)"
    )


def decide(
    con,
    item: str,
    action: str,
    *,
    candidate: int = 1,
    project: str | None = None,
    by: str,
    why: str,
) -> Decision:
    """The decision for ``item`` of the queue on ``con``: accept its ``candidate``, reassign it to
    ``project`` (a project of the org mapping), or reject it (ReviewError for a mistake)."""
    chosen = find_item(detail.review_items(con, Filters()), item)
    if action == "accept":
        candidates = {c["rank"]: c for c in chosen["candidates"]}
        if candidate not in candidates:
            offered = ", ".join(str(rank) for rank in candidates) or "none"
            raise ReviewError(
                f"item {chosen['review_rank']} has no candidate {candidate} (candidates: "
                f"{offered}); use `gpucost review reassign` to name a project"
            )
        project = candidates[candidate]["project_id"]
    elif action == "reassign":
        project = (project or "").strip().lower()
        known = detail.org_projects(con)
        if not project or (known is not None and project not in known):
            raise ReviewError(
                f"{project or '(empty)'} is not a project of the org mapping (reference/); "
                "`gpucost review list` shows the candidates and their teams"
            )
    elif chosen.get("review_reason") == "suspected_mislabel" and chosen.get("label_project_id"):
        # rejecting a suspected mislabel keeps the tag: an override naming it (not asked again)
        return Decision(chosen["workload_id"], "confirm", chosen["label_project_id"], by, why)
    else:
        project = None
    return Decision(chosen["workload_id"], action, project, by, why)


# --- the command ------------------------------------------------------------------------------


def _plain(value) -> str:
    """A landed value for the terminal: control characters shown as escapes, never run."""
    text = "" if value is None else str(value)
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def format_queue(items: Sequence[dict]) -> str:
    """The queue as text: per item its rank, cost at stake, reason and workload, its candidates
    (project, team, probability) and the signals behind the first."""
    if not items:
        return "The review queue is empty."
    lines = []
    for row in items:
        lines.append(
            f"#{row['review_rank']}  {fmt_money(row['effective_cost'], row['billing_currency'])}"
            f"  [{_plain(row['review_reason'])}]  {_plain(row['workload_id'])}"
        )
        for candidate in row["candidates"]:
            team = (
                f"team {_plain(candidate['team_id'])}"
                if candidate["team_id"]
                else "no team: not in the org mapping"
            )
            lines.append(
                f"    {candidate['rank']}. {_plain(candidate['project_id'])} ({team})"
                f"  p = {candidate['probability']:.3f}"
            )
        if not row["candidates"]:
            lines.append("    no candidate (no model could be trained)")
        if row.get("attribution_signals"):
            lines.append(f"    signals: {_plain(row['attribution_signals'])}")
    return "\n".join(lines)


def format_handovers(rows: Sequence[dict]) -> str:
    """The projects the org mapping gives to their old team (``rpt_team_handovers``), as text;
    empty when there are none."""
    if not rows:
        return ""
    lines = ["", "The org mapping looks out of date (correct reference/*.csv to settle it):"]
    for row in rows:
        lines.append(
            f"  {_plain(row['project_id'])}: mapped to team {_plain(row['from_team_id'])},"
            f" its pods say team {_plain(row['to_team_id'])}"
            f" since {row['handed_over_at']:%Y-%m-%d %H:%M} UTC"
            f" ({row['pods_after_agreeing']} of {row['pods_after']} pods declaring a team since,"
            f" {row['pods_before_agreeing']} of {row['pods_before']} before);"
            f" {row['workloads_moved']} workloads charged to {_plain(row['to_team_id'])},"
            f" {fmt_money(row['moved_effective_cost'], row['billing_currency'])}"
        )
    return "\n".join(lines)


def _connection(args: argparse.Namespace):
    if args.parquet:
        return open_queue(parquet=Path(args.parquet).expanduser())
    project_dir = find_project_dir()
    return open_queue(warehouse=warehouse_path(project_dir, args.warehouse))


def cmd_review(args: argparse.Namespace) -> int:
    try:
        con = _connection(args)
        try:
            if args.action == "list":
                print(format_queue(detail.review_items(con, Filters(), limit=args.limit)))
                handovers = format_handovers(detail.team_handovers(con) or [])
                if handovers:
                    print(handovers)
                return 0
            decision = decide(
                con,
                args.item,
                args.action,
                candidate=getattr(args, "candidate", 1),
                project=getattr(args, "project", None),
                by=args.by if args.by is not None else default_reviewer(),
                why=args.why,
            )
        finally:
            con.close()
        path = overrides_path(resolve_path(Path.cwd(), args.overrides) if args.overrides else None)
        row = record_decision(path, decision, force=args.force)
    except ReviewError as error:
        print(f"gpucost review: {error}", file=sys.stderr)
        return 2
    verdict = f"project {row['project_id']}" if row["project_id"] else "rejected (owner unknown)"
    print(
        f"Recorded {row['override_id']}: {_plain(decision.workload_id)} -> {verdict}, by "
        f"{_plain(row['decided_by'])} on {row['decided_at']}, in {path}. It takes effect at the "
        "next build (`gpucost build`)."
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    review = subparsers.add_parser("review", help="the attribution review queue: list, decide")
    actions = review.add_subparsers(dest="action", required=True)

    def source(parser: argparse.ArgumentParser) -> None:
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--warehouse", help="DuckDB file (default $GPUCOST_WAREHOUSE)")
        where.add_argument("--parquet", help="folder of published marts (gpucost publish)")

    listing = actions.add_parser("list", help="the queue by money at stake")
    source(listing)
    listing.add_argument("--limit", type=int, default=20, help="items to show (default 20)")
    listing.set_defaults(func=cmd_review)

    def decision(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text)
        parser.add_argument("item", help="rank in `gpucost review list`, or the workload id")
        source(parser)
        parser.add_argument("--why", required=True, help="why (kept with the override)")
        parser.add_argument("--by", help="who decides (default: the OS user)")
        parser.add_argument(
            "--overrides",
            help=f"overrides file (default ${OVERRIDES_ENV} or the project's {OVERRIDES_SEED})",
        )
        parser.add_argument(
            "--force", action="store_true", help="record it even if the workload has a decision"
        )
        parser.set_defaults(func=cmd_review)
        return parser

    accept = decision("accept", "place the item on one of its candidates")
    accept.add_argument("--candidate", type=int, default=1, help="1, 2 or 3 (default 1)")
    reassign = decision("reassign", "place the item on another project of the org mapping")
    reassign.add_argument("project", help="a project id of the org mapping")
    decision("reject", "not the suggested project, owner unknown: leave it unallocated")
