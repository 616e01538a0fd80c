"""The review queue people use: ``gpucost review list|accept|reassign|reject`` on the session's
warehouse (no build), the override row it writes (escaping, CSV injection, duplicates), the review
page's sections, and the browser helper that ``test_attribution_warehouse`` drives end to end
(accept in headless Chromium, rebuild, the money moved).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from gpucost.commands import dashboard_detail as detail
from gpucost.commands import review
from gpucost.commands.cli import main
from gpucost.commands.publish import publish_marts

from .test_dashboard import BROWSER_DIR, CHROMIUM, INSTALL_HINT, _free_port, run_page_script

PROJECT_DIR = Path(__file__).resolve().parents[2]
HEADER = ",".join(review.OVERRIDE_COLUMNS) + "\n"
NASTY_ID = "c1/ns.a/job-1+(x)[0]{2}|a^b$c\\d?*/u1"
NOW = datetime(2026, 11, 26, 9, 30, 5, tzinfo=UTC)


def _overrides(tmp_path: Path) -> Path:
    path = tmp_path / "attribution_overrides.csv"
    path.write_text(HEADER, encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --- the override row --------------------------------------------------------------------------


def test_workload_pattern_matches_exactly_itself_in_re2_and_python():
    pattern = review.workload_pattern(NASTY_ID)
    assert pattern.startswith("^") and pattern.endswith("$")
    assert re.fullmatch(pattern, NASTY_ID)
    near = [NASTY_ID + "x", "x" + NASTY_ID, NASTY_ID.replace(".", "Z"), NASTY_ID.replace("+", "")]
    for other in near:
        assert not re.search(pattern, other), other
    # DuckDB's regexp_matches is RE2, the function the build matches overrides with
    with duckdb.connect() as con:
        found = con.execute(
            "select regexp_matches(?, ?), list_bool_or([regexp_matches(x, ?) for x in ?])",
            [NASTY_ID, pattern, pattern, near],
        ).fetchone()
    assert found == (True, False)


def test_a_decision_is_one_safe_override_row_and_a_second_is_refused(tmp_path):
    path = _overrides(tmp_path)
    decision = review.Decision(
        NASTY_ID, "accept", "rag-search", "=cmd|' /C calc'!A0", '@SUM(1), "quoted"\nnext line'
    )
    row = review.record_decision(path, decision, now=NOW)
    [written] = _rows(path)
    assert written == row
    assert written["override_id"].startswith("review-20261126-093005-")
    assert written["match_field"] == "workload_id"
    assert written["match_pattern"] == review.workload_pattern(NASTY_ID)
    assert written["project_id"] == "rag-search"
    assert written["decided_at"] == "2026-11-26"
    # formula triggers are neutralised, the text kept; one line per row
    assert written["decided_by"] == "'=cmd|' /C calc'!A0"
    assert written["reason"] == '\'@SUM(1), "quoted" next line'
    assert path.read_text(encoding="utf-8").count("\n") == 2
    # a second decision for the same workload: refused, the file unchanged
    before = path.read_bytes()
    with pytest.raises(review.ReviewError, match=r"already has a decision.*--force"):
        review.record_decision(
            path, review.Decision(NASTY_ID, "reject", None, "dana", "no"), now=NOW
        )
    assert path.read_bytes() == before
    # forced, in the same second: a new id, the project empty (a rejection)
    forced = review.record_decision(
        path, review.Decision(NASTY_ID, "reject", None, "dana", "no"), force=True, now=NOW
    )
    assert forced["override_id"] == row["override_id"] + "-2"
    assert [r["project_id"] for r in _rows(path)] == ["rag-search", ""]


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (review.Decision("w", "accept", "p", "dana", "  "), "say why"),
        (review.Decision("w", "accept", "p", "", "ok"), "say who"),
        (review.Decision("w", "reject", "p", "dana", "ok"), "names no project"),
        (review.Decision("w", "accept", None, "dana", "ok"), "names no project"),
        (review.Decision("w", "approve", "p", "dana", "ok"), "unknown decision"),
    ],
)
def test_a_decision_without_who_or_why_is_refused(tmp_path, decision, message):
    path = _overrides(tmp_path)
    with pytest.raises(review.ReviewError, match=message):
        review.record_decision(path, decision)
    assert path.read_text(encoding="utf-8") == HEADER


def test_a_file_without_its_last_line_end_keeps_its_rows(tmp_path):
    path = tmp_path / "attribution_overrides.csv"
    path.write_text(HEADER + "ovr-1,user,^carol$,llm-pretrain,dana,2026-11-01,moved", "utf-8")
    review.record_decision(path, review.Decision("c/n/p/u", "reject", None, "dana", "no"), now=NOW)
    rows = _rows(path)
    assert (rows[0]["override_id"], rows[0]["reason"]) == ("ovr-1", "moved")
    assert rows[1]["match_pattern"] == "^c/n/p/u$"
    # a missing file gets the header
    fresh = tmp_path / "new" / "overrides.csv"
    review.record_decision(fresh, review.Decision("c/n/p/u", "reject", None, "dana", "no"))
    assert fresh.read_text(encoding="utf-8").startswith(HEADER)


# --- the command on the session's warehouse ----------------------------------------------------


@pytest.fixture(scope="module")
def queue(generated_warehouse) -> list[tuple]:
    rows = generated_warehouse.sql(
        "select review_rank, workload_id, candidate_1_project_id, candidate_1_team_id,"
        " candidate_2_project_id, effective_cost from marts.rpt_attribution_review"
        " where candidate_2_project_id is not null order by review_rank limit 3"
    )
    assert len(rows) == 3, "the generated month has items with two candidates to review"
    return rows


def _review(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["review", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_the_queue_by_money_with_candidates_and_teams(generated_warehouse, capsys):
    code, out, _ = _review(capsys, "list", "--warehouse", str(generated_warehouse.path))
    assert code == 0
    top = generated_warehouse.sql(
        "select review_rank, workload_id, candidate_1_project_id, candidate_1_team_id,"
        " candidate_1_probability from marts.rpt_attribution_review order by review_rank limit 20"
    )
    heads = [line for line in out.splitlines() if line.startswith("#")]
    assert [line.split()[0] for line in heads] == [f"#{rank}" for rank, *_ in top]
    assert [line.rsplit("  ", 1)[1] for line in heads] == [workload for _, workload, *_ in top]
    assert "[unplaced]" in heads[0]
    for _, _, project, team, probability in top:
        if project is not None:
            assert f"1. {project} (team {team})  p = {probability:.3f}" in out
    # the teams come from the org mapping
    mapping = dict(
        generated_warehouse.sql(
            "select project_id, team_id from staging.stg_reference__org_mapping"
        )
    )
    assert all(team == mapping[project] for _, _, project, team, _ in top if project)
    code, out, _ = _review(
        capsys, "list", "--warehouse", str(generated_warehouse.path), "--limit", "2"
    )
    assert len([line for line in out.splitlines() if line.startswith("#")]) == 2


def test_accept_reassign_reject_write_the_override_rows(
    generated_warehouse, queue, tmp_path, capsys
):
    path = _overrides(tmp_path)
    where = ["--warehouse", str(generated_warehouse.path), "--overrides", str(path)]
    (rank_1, workload_1, project_1, *_), (_, workload_2, _, _, project_2b, _), third = queue
    code, out, err = _review(
        capsys, "accept", str(rank_1), *where, "--by", "dana", "--why", "asked the team"
    )
    assert (code, err) == (0, "")
    assert "takes effect at the next build" in out
    # the second candidate, by workload id
    code, _, err = _review(
        capsys, "accept", workload_2, "--candidate", "2", *where, "--why", "second"
    )
    assert (code, err) == (0, "")
    code, _, err = _review(capsys, "reject", third[1], *where, "--why", "none of these")
    assert (code, err) == (0, "")
    rows = _rows(path)
    assert [(r["match_pattern"], r["project_id"]) for r in rows] == [
        (review.workload_pattern(workload_1), project_1),
        (review.workload_pattern(workload_2), project_2b),
        (review.workload_pattern(third[1]), ""),
    ]
    assert rows[0]["decided_by"] == "dana" and rows[0]["reason"] == "asked the team"
    assert rows[1]["decided_by"] == review.default_reviewer() != ""
    assert {r["decided_at"] for r in rows} == {datetime.now(UTC).date().isoformat()}
    # a duplicate decision is refused (one line, exit 2) unless forced
    before = path.read_bytes()
    code, out, err = _review(capsys, "reject", str(rank_1), *where, "--why", "changed my mind")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "already has a decision" in err and "--force" in err
    assert path.read_bytes() == before
    # reassign: to a project of the org mapping only
    [(other,)] = generated_warehouse.sql(
        "select min(project_id) from staging.stg_reference__org_mapping"
        f" where project_id <> '{project_1}'"
    )
    code, out, err = _review(
        capsys, "reassign", str(rank_1), "no-such-project", *where, "--why", "x", "--force"
    )
    assert code == 2 and "not a project of the org mapping" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert path.read_bytes() == before
    code, _, err = _review(
        capsys, "reassign", str(rank_1), other.upper(), *where, "--why", "moved", "--force"
    )
    assert (code, err) == (0, "")
    assert _rows(path)[-1]["project_id"] == other
    # an unknown item and a missing candidate are one-line errors too
    code, _, err = _review(capsys, "accept", "no/such/workload", *where, "--why", "x")
    assert code == 2 and "no item" in err
    code, _, err = _review(capsys, "accept", str(rank_1), "--candidate", "9", *where, "--why", "x")
    assert code == 2 and "no candidate 9" in err


def test_the_queue_reads_the_same_from_published_parquet(generated_warehouse, tmp_path, capsys):
    out_dir = tmp_path / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    _, from_warehouse, _ = _review(capsys, "list", "--warehouse", str(generated_warehouse.path))
    code, from_parquet, _ = _review(capsys, "list", "--parquet", str(out_dir))
    assert code == 0 and from_parquet == from_warehouse
    code, _, err = _review(capsys, "list", "--parquet", str(tmp_path / "nothing"))
    assert code == 2 and "gpucost publish" in err


def test_the_overrides_file_follows_the_option_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(review.OVERRIDES_ENV, raising=False)
    assert review.overrides_path(project_dir=tmp_path) == tmp_path / "seeds" / (
        "attribution_overrides.csv"
    )
    monkeypatch.setenv(review.OVERRIDES_ENV, str(tmp_path / "env.csv"))
    assert review.overrides_path(project_dir=tmp_path) == tmp_path / "env.csv"
    assert review.overrides_path(tmp_path / "opt.csv") == tmp_path / "opt.csv"


# --- the page ----------------------------------------------------------------------------------


def test_markdown_literal_shows_landed_text_as_it_is():
    text = "[x](http://evil.example) ![i](http://e/i.png) :red[alarm] <b>b</b> $x$ *y*"
    escaped = detail.markdown_literal(text)
    assert re.sub(r"\\(.)", r"\1", escaped) == text
    for raw in ("[x]", "](", ":red[", "<b>", "$x$", "*y*"):
        assert raw not in escaped


def _review_page(warehouse: Path, tmp_path: Path, monkeypatch):
    """The review page rendered in process (streamlit.testing) from ``warehouse``'s published
    marts, with an empty overrides file; it must render without an exception."""
    from streamlit.testing.v1 import AppTest

    out_dir = tmp_path / "parquet"
    publish_marts(warehouse, out_dir, log=None)
    monkeypatch.setenv("GPUCOST_PARQUET_DIR", str(out_dir))
    monkeypatch.setenv(review.OVERRIDES_ENV, str(_overrides(tmp_path)))
    page = PROJECT_DIR / "dashboard" / "pages" / "review.py"
    app = AppTest.from_file(str(page), default_timeout=60).run()
    assert not app.exception
    return app


def test_review_page_shows_each_reason_as_its_own_section(
    generated_warehouse, tmp_path, monkeypatch
):
    tampered = generated_warehouse.copy("review_sections")
    with duckdb.connect(str(tampered)) as con:
        con.execute(
            "update marts.rpt_attribution_review set review_reason = 'suspected_mislabel',"
            " workload_id = workload_id || '[x](http://evil.example)' where review_rank = 2"
        )
        reasons = con.sql(
            "select count(distinct review_reason) from marts.rpt_attribution_review"
        ).fetchall()[0][0]
    app = _review_page(tampered, tmp_path, monkeypatch)
    headers = [header.value for header in app.header]
    # one section per reason in the queue (the month has team-only items too), in the page's order
    assert headers[0].startswith("Unplaced workloads") and len(headers) == reasons >= 2
    assert headers[-1].startswith("Suspected mislabels")
    texts = [text.value for text in app.text]
    assert any(t.startswith("#2  ") and t.endswith("[x](http://evil.example)") for t in texts)
    assert "takes effect at the next build" in app.info[0].value
    # the first item's form: without a reason nothing is written; with one, the row of the CLI
    overrides = Path(os.environ[review.OVERRIDES_ENV])
    [record] = [button for button in app.button if button.label == "Record decision"][:1]
    record.click().run()
    assert "say why" in app.error[0].value and overrides.read_text(encoding="utf-8") == HEADER
    [why] = [box for box in app.text_input if box.key == "review-why-1"]
    why.input("asked the team")  # a form's values go with its submit button
    [record] = [button for button in app.button if button.label == "Record decision"][:1]
    record.click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    shown = re.sub(r"\\(.)", r"\1", app.success[0].value)  # the markdown-escaped text, as shown
    assert shown.startswith("Recorded review-") and "takes effect at the next build" in shown
    [(workload, candidate)] = generated_warehouse.sql(
        "select workload_id, candidate_1_project_id from marts.rpt_attribution_review"
        " where review_rank = 1"
    )
    [row] = review.read_overrides(overrides)
    assert (row["match_pattern"], row["project_id"]) == (
        review.workload_pattern(workload),
        candidate,
    )


# --- the browser: accept an item on the review page --------------------------------------------


def browser_prerequisites() -> str:
    """node, or a failure naming what is missing and how to install it (CI must not skip)."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(str(CHROMIUM))
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        missing.append(str(BROWSER_DIR / "node_modules" / "playwright-core"))
    node = shutil.which("node")
    if node is None:
        missing.append("node")
    if missing:
        pytest.fail(f"browser test prerequisites missing: {', '.join(missing)}; {INSTALL_HINT}")
    return node


def decide_in_browser(
    parquet: Path, overrides: Path, rank: int, work: Path, *, by: str, why: str
) -> dict:
    """Serve the dashboard on the published ``parquet`` (decisions to ``overrides``), record the
    default decision (accept candidate 1) on item ``rank`` of the review page in headless
    Chromium (tests/browser/review.mjs), and return what the page showed."""
    node = browser_prerequisites()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / "streamlit-review.log"
    env = os.environ | {"GPUCOST_PARQUET_DIR": str(parquet), review.OVERRIDES_ENV: str(overrides)}
    command = [sys.executable, "-m", "streamlit", "run", "dashboard/app.py"]
    command += ["--server.headless", "true", "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    command += ["--server.fileWatcherType", "none"]
    with log.open("w") as log_file:
        server = subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    script = ["review.mjs", "--url", url, "--rank", str(rank), "--by", by, "--why", why]
    script += ["--screenshot", str(work / "review.png")]
    page = run_page_script(node, script, url, server, log)
    assert page["exceptions"] == [] and page["page_errors"] == []
    return page


def test_a_stale_org_mapping_is_listed_after_the_queue_and_on_the_page(
    generated_warehouse, tmp_path, monkeypatch, capsys
):
    # the generated month hands no project over: nothing to list there
    assert generated_warehouse.sql("select count(*) from marts.rpt_team_handovers") == [(0,)]
    _, out, _ = _review(capsys, "list", "--warehouse", str(generated_warehouse.path))
    assert "org mapping" not in out
    tampered = generated_warehouse.copy("team_handovers")
    project = "summ\x1barizer[x](http://evil.example)"
    with duckdb.connect(str(tampered)) as con:
        con.execute(
            "insert into marts.rpt_team_handovers values (1, ?, 'Summarizer', 'nlp', 'recsys',"
            " timestamp '2026-10-09 03:20:00', 7, 6, 12, 12, 'c/ns/p/u', 21, 'USD', 1234.565)",
            [project],
        )
    code, out, _ = _review(capsys, "list", "--warehouse", str(tampered))
    assert code == 0
    head, line = out.splitlines()[-2:]
    assert head.startswith("The org mapping looks out of date")
    assert line == (
        "  summ\\x1barizer[x](http://evil.example): mapped to team nlp, its pods say team recsys"
        " since 2026-10-09 03:20 UTC (12 of 12 pods declaring a team since, 6 of 7 before);"
        " 21 workloads charged to recsys, 1,234.57 USD"
    )
    app = _review_page(tampered, tmp_path, monkeypatch)
    assert app.header[-1].value == "The org mapping looks out of date"
    [table] = app.dataframe
    [row] = table.value.to_dict("records")
    # the landed id as data, not markdown
    assert (row["project"], row["its pods say"], row["cost moved"]) == (
        project,
        "recsys",
        "1,234.57 USD",
    )
    assert (row["pods declaring a team since"], row["pods declaring a team before"]) == (
        "12 of 12",
        "6 of 7",
    )
