"""The attribution review queue, a page of the showback dashboard (``streamlit run
dashboard/app.py``, then "review" in the sidebar; ``/review``).

The queue is ``rpt_attribution_review`` from the published Parquet files, by money at stake, one
section per ``review_reason`` (``gpucost.commands.dashboard_detail.review_sections``). Each item
shows its top-3 candidates (project, team, probability) and the signals behind the first, and a
form: accept a candidate, reassign to a project of the org mapping, or reject (owner unknown), with
who and why. A decision goes through ``gpucost.commands.review.decide`` and
``record_decision``, the functions ``gpucost review`` uses: one override row appended to the
overrides file (``$GPUCOST_OVERRIDES``, else the project's ``seeds/attribution_overrides.csv``),
read by the next build. Landed values reach the page as plain text (``st.text``, data frames) or
markdown-escaped (``dashboard_detail.markdown_literal``), never as HTML.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from gpucost.commands import dashboard_data as data
from gpucost.commands import dashboard_detail as detail
from gpucost.commands import review
from gpucost.commands.labels import owner_label

PROJECT_DIR = Path(__file__).resolve().parents[2]
NO_TEAM = "no team: not in the org mapping"
HANDOVERS_HEADING = "The org mapping looks out of date"

st.set_page_config(page_title="Attribution review queue", page_icon=":mag:", layout="wide")


@st.cache_resource(max_entries=2, show_spinner="Loading the published marts")
def _snapshot(signature: tuple):
    """One in-memory copy of the Parquet files per published version (see data.signature)."""
    return data.load(Path(signature[0]))


def _team(team_id: str | None) -> str:
    return f"team {team_id}" if team_id else NO_TEAM


def _choices(item: dict) -> list[tuple[str, int]]:
    return [("accept", c["rank"]) for c in item["candidates"]] + [("reassign", 0), ("reject", 0)]


def _choice_label(item: dict, choice: tuple[str, int]) -> str:
    action, rank = choice
    if action == "accept":
        candidate = item["candidates"][rank - 1]
        return f"Accept candidate {rank}: {candidate['project_id']}"
    if action == "reassign":
        return "Reassign to another project"
    return "Reject: none of these, owner unknown"


def _item(con, item: dict, overrides: Path, projects: dict[str, str] | None) -> None:
    rank = item["review_rank"]
    with st.container(border=True, key=f"review-item-{rank}"):
        left, right = st.columns([3, 1])
        with left:
            st.text(f"#{rank}  {item['workload_id']}")
            why = item["reason"] + (
                f" ({item['label_project_id']})" if item.get("label_project_id") else ""
            )
            team = owner_label(item["label_team_id"]) if item.get("label_team_id") else "-"
            st.text(f"Why here: {why}. Team label: {team}. User: {item.get('user_id') or '-'}")
        right.metric("At stake", data.fmt_money(item["effective_cost"], item["billing_currency"]))
        # plain text, one line per candidate (light: a page of forms, not of data grids)
        st.text(
            "\n".join(
                f"Candidate {c['rank']}: {c['project_id']} ({_team(c['team_id'])}), "
                f"p = {c['probability']:.3f}"
                for c in item["candidates"]
            )
            or "No candidate: no model could be trained."
        )
        if item.get("attribution_signals"):
            st.text(f"Signals: {item['attribution_signals']}")
        earlier = review.decisions_for(overrides, item["workload_id"])
        if earlier:
            last = earlier[-1]
            verdict = f"project {last['project_id']}" if last.get("project_id") else "rejected"
            st.info(
                detail.markdown_literal(
                    f"Decided: {verdict} by {last.get('decided_by')} on "
                    f"{last.get('decided_at')} ({last.get('override_id')}); it takes effect at the "
                    "next build."
                )
            )
        _form(con, item, overrides, projects)


def _form(con, item: dict, overrides: Path, projects: dict[str, str] | None) -> None:
    rank = item["review_rank"]
    with st.form(key=f"review-form-{rank}"):
        choice = st.selectbox(
            "Decision",
            _choices(item),
            format_func=lambda value, item=item: _choice_label(item, value),
            key=f"review-choice-{rank}",
        )
        if projects is None:
            project = st.text_input("Project (for a reassignment)", key=f"review-project-{rank}")
        else:
            project = st.selectbox(
                "Project (for a reassignment)",
                list(projects),
                index=None,
                format_func=lambda value: f"{value} ({_team(projects[value])})",
                placeholder="Choose a project of the org mapping",
                key=f"review-project-{rank}",
            )
        by = st.text_input("Decided by", value=review.default_reviewer(), key=f"review-by-{rank}")
        why = st.text_input("Why", key=f"review-why-{rank}")
        force = st.checkbox("Record it even if decided before", key=f"review-force-{rank}")
        submitted = st.form_submit_button("Record decision")
    if not submitted:
        return
    action, candidate = choice
    try:
        decision = review.decide(
            con,
            item["workload_id"],
            action,
            candidate=candidate or 1,
            project=project,
            by=by,
            why=why,
        )
        row = review.record_decision(overrides, decision, force=force)
    except review.ReviewError as error:
        st.error(detail.markdown_literal(str(error)))
        return
    verdict = f"project {row['project_id']}" if row["project_id"] else "rejected (owner unknown)"
    with st.container(key=f"review-recorded-{rank}"):
        st.success(
            detail.markdown_literal(
                f"Recorded {row['override_id']}: {decision.workload_id} -> {verdict}, by "
                f"{row['decided_by']}. It takes effect at the next build."
            )
        )


def _handovers(rows: list[dict] | None) -> None:
    """The projects the org mapping gives to their old team, with the evidence and the money the
    build moved to the new team: a finding to correct ``reference/*.csv`` with, not a decision."""
    if not rows:
        return
    st.header(HANDOVERS_HEADING)
    st.caption(
        "Each project's own pods that declare a team (a team label, else a namespace named after "
        "a team) name its mapped team, then another team. The build "
        "charges the project's workloads from that date on to the new team; correct the project's "
        "team in the org mapping (`reference/*.csv`) to settle it."
    )
    st.dataframe(
        [
            {
                "project": row["project_id"],
                "mapped team": row["from_team_id"],
                "its pods say": row["to_team_id"],
                "since (UTC)": row["handed_over_at"],
                "pods declaring a team since": (
                    f"{row['pods_after_agreeing']} of {row['pods_after']}"
                ),
                "pods declaring a team before": (
                    f"{row['pods_before_agreeing']} of {row['pods_before']}"
                ),
                "workloads moved": row["workloads_moved"],
                "cost moved": data.fmt_money(row["moved_effective_cost"], row["billing_currency"]),
                "first pod of the new team": row["first_workload_id"],
            }
            for row in rows
        ],
        hide_index=True,
        key="review-handovers",
    )


def main() -> None:
    st.title("Attribution review queue")
    directory = data.parquet_dir(PROJECT_DIR)
    try:
        con = _snapshot(data.signature(directory)).cursor()
    except data.DashboardDataError as error:
        st.error(str(error))
        st.stop()
    overrides = review.overrides_path()
    st.info(
        "Each decision appends one override row (who, when, why) to "
        f"{detail.markdown_literal(overrides.name)}. **It takes effect at the next build** "
        "(`gpucost build`): an accepted or reassigned workload is then placed on that project "
        "and becomes a training label; a rejected one stays unallocated with the reason "
        "*rejected in review*. The same decisions from a terminal: `gpucost review`."
    )
    limit = st.sidebar.number_input("Items shown", min_value=1, max_value=500, value=10, step=5)
    try:
        items = detail.review_items(con, data.Filters(), limit=int(limit))
        projects = detail.org_projects(con)
        if not items:
            st.success("The review queue is empty.")
        for _reason, heading, members in detail.review_sections(items):
            st.header(detail.markdown_literal(heading))
            for item in members:
                _item(con, item, overrides, projects)
        _handovers(detail.team_handovers(con))
    finally:
        con.close()
    # an empty marker written last: the browser test waits for it (no text on the page)
    st.markdown('<span id="gpucost-review-rendered"></span>', unsafe_allow_html=True)


main()
