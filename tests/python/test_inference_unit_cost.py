"""The unit cost of inference: serving counters landed by hand, their hourly increases worked out on
paper (a counter reset, a sample landed twice, an hour's boundary, two engines plus Triton), the mart
`fct_inference_unit_cost` against the allocation mart, bad serving files in quarantine; and the
generated month, where the mart's cost reconciles to the serving pods' allocated cost and its tokens to
the counters in the landed files, recomputed here in Python."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import pytest

from gpucost.commands.collect import SERVING_METRICS as COLLECTED_METRICS
from gpucost.synth.serving import SERVING_METRICS
from tests.python.landing_zones import (
    Warehouse,
    small_month_cases,
)

# one xdist group with test_focus14, which reads the same session warehouse (landing_zones.
# small_month_cases): one worker builds it while the other gets on with other suites, none waits on it
pytestmark = [pytest.mark.warehouse, pytest.mark.xdist_group("small_month_cases")]

T0 = 1790812800  # 2026-10-01T00:00:00Z, the small month's day
DAY = "2026-10-01"
COMPUTE = "('compute_gpu', 'compute_cpu', 'compute_memory')"
UNIT = Decimal("1e-18")


def response(series: list[tuple[dict[str, str], list[tuple[int, str]]]]) -> str:
    """A Prometheus /api/v1/query_range response holding these series."""
    result = [
        {"metric": labels, "values": [[t, v] for t, v in values]} for labels, values in series
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def inference_pods(landing: Path) -> list[dict[str, str]]:
    """The ReplicaSet pods of the landed month (kube_pod_info), one per deployment, by name."""
    path = next(landing.glob(f"metrics/kube/*/{DAY}/kube_pod_info.json"))
    pods: dict[str, dict[str, str]] = {}
    for series in json.loads(path.read_text())["data"]["result"]:
        labels = series["metric"]
        if labels.get("created_by_kind") == "ReplicaSet":
            deployment = labels["created_by_name"].rsplit("-", 1)[0]
            pods.setdefault(deployment, labels)
    return [pods[d] for d in sorted(pods)]


# Pod A (vLLM): the counters' samples at T0 + offset; the prompt counter falls at +900 (the container
# restarted), its samples at +600 and +900 are landed twice, and +3600 closes hour 0.
OFFSETS = [0, 300, 600, 900, 1200, 3600, 3900]
VLLM_PROMPT = ["0", "1000", "2500", "400", "900", "1700", "2000"]
VLLM_GENERATED = ["0", "100", "200", "50", "100", "150", "160"]
VLLM_STOP = ["0", "10", "20", "3", "5", "8", "9"]
VLLM_LENGTH = ["0", "1", "1", "0", "0", "1", "1"]
# On paper: prompt rises 1000, 1500, 400 (reset: the new value), 500, 800 (+3600: hour 0), 300 (hour 1)
PROMPT_HOUR_0, PROMPT_HOUR_1 = 4200, 300
GENERATED = 100 + 100 + 50 + 50 + 50 + 10  # 360
REQUESTS_A = (10 + 10 + 3 + 2 + 3 + 1) + (
    1 + 0 + 0 + 0 + 1 + 0
)  # stop 29 + length 2 (a reset to 0)
# Pod B (TGI, no model label): samples at +0, +1800, +7200
TGI_OFFSETS = [0, 1800, 7200]
TGI_INPUT, TGI_GENERATED = ["0", "5000", "12000"], ["0", "700", "1000"]
TGI_SUCCESS, TGI_COUNT = ["0", "4", "9"], ["0", "5", "10"]
# Pod C (Triton): requests only
TRITON_SUCCESS = ["0", "100", "250"]


def at(offsets: list[int], values: list[str]) -> list[tuple[int, str]]:
    return [(T0 + o, v) for o, v in zip(offsets, values, strict=True)]


def land_serving_counters(landing: Path) -> dict[str, dict[str, str]]:
    """The generator's serving counters of a landing zone replaced by the hand-written ones above
    (and two bad files); returns the three pods they name, by engine."""
    serving = landing / "metrics" / "serving"
    cluster = next((landing / "metrics" / "kube").iterdir()).name
    for path in sorted(serving.rglob("*"), reverse=True):  # the generator's counters make way
        path.unlink() if path.is_file() else path.rmdir()
    folder = serving / cluster / DAY
    folder.mkdir(parents=True)
    a, b, c = inference_pods(landing)[:3]

    def labels(pod: dict[str, str], name: str, **extra: str) -> dict[str, str]:
        return {"__name__": name, "namespace": pod["namespace"], "pod": pod["pod"], **extra}

    vllm = {"model_name": "acme/chat-8b", "engine": "0"}
    files = {
        "vllm_prompt_tokens_total.json": [
            (labels(a, "vllm:prompt_tokens_total", **vllm), at(OFFSETS, VLLM_PROMPT))
        ],
        # the same samples re-scraped into a second file: counted once
        "vllm_prompt_tokens_total.rescrape.json": [
            (labels(a, "vllm:prompt_tokens_total", **vllm), at(OFFSETS[2:4], VLLM_PROMPT[2:4]))
        ],
        "vllm_generation_tokens_total.json": [
            (labels(a, "vllm:generation_tokens_total", **vllm), at(OFFSETS, VLLM_GENERATED))
        ],
        "vllm_request_success_total.json": [
            (
                labels(a, "vllm:request_success_total", finished_reason="stop", **vllm),
                at(OFFSETS, VLLM_STOP),
            ),
            (
                labels(a, "vllm:request_success_total", finished_reason="length", **vllm),
                at(OFFSETS, VLLM_LENGTH),
            ),
        ],
        "tgi_request_input_length_sum.json": [
            (labels(b, "tgi_request_input_length_sum"), at(TGI_OFFSETS, TGI_INPUT))
        ],
        "tgi_request_generated_tokens_sum.json": [
            (labels(b, "tgi_request_generated_tokens_sum"), at(TGI_OFFSETS, TGI_GENERATED))
        ],
        "tgi_request_success.json": [
            (labels(b, "tgi_request_success"), at(TGI_OFFSETS, TGI_SUCCESS))
        ],
        "tgi_request_count.json": [(labels(b, "tgi_request_count"), at(TGI_OFFSETS, TGI_COUNT))],
        "nv_inference_request_success.json": [
            (
                labels(c, "nv_inference_request_success", model="detector", version="2"),
                at(TGI_OFFSETS, TRITON_SUCCESS),
            )
        ],
        # a negative counter sample: quarantined, the rest of the series read
        "nv_inference_count.json": [
            (
                labels(c, "nv_inference_count", model="detector", version="2"),
                at(TGI_OFFSETS, ["0", "-5", "400"]),
            )
        ],
        # no series: no Triton failure that day, nothing to quarantine
        "nv_inference_request_failure.json": [],
    }
    for name, series in files.items():
        (folder / name).write_text(response(series), encoding="utf-8")
    (folder / "tgi_request_success.truncated.json").write_text('{"status":"succ', "utf-8")
    return {"vllm": a, "tgi": b, "triton": c}


@pytest.fixture(scope="module")
def hand_built(tmp_path_factory) -> tuple[Warehouse, dict[str, dict[str, str]]]:
    """The small month with these counters, built: the session's small month of cases
    (landing_zones.small_month_cases), whose FOCUS bill is test_focus14's 1.4 rewrite (the same
    allocation as the 1.0 bill's, which test_focus14 checks; the serving counters read neither)."""
    warehouse, cases = small_month_cases(tmp_path_factory)
    return warehouse, cases["serving_counters"]


def pod_key(cluster: str, pod: dict[str, str]) -> str:
    return f"{cluster}/{pod['namespace']}/{pod['pod']}"


def test_the_generator_writes_what_the_collector_lands():
    assert SERVING_METRICS == COLLECTED_METRICS


def test_generated_counters_rise_and_fall_only_at_a_restart(generated_month):
    """The generator's counters: one series per pod and label set across the days' files, never
    decreasing except when the container restarts (once at most per pod: every series of the pod
    falls at the same time), starting at zero with the pod."""
    landing, _ = generated_month
    series: dict[tuple, dict[int, float]] = defaultdict(dict)
    for path in landing.glob("metrics/serving/*/*/*.json"):
        for s in json.loads(path.read_text())["data"]["result"]:
            series[(path.parts[-3], tuple(sorted(s["metric"].items())))].update(
                {int(t): float(v) for t, v in s["values"]}
            )
    assert {dict(labels)["__name__"] for _, labels in series} == set(SERVING_METRICS)
    falls: dict[tuple[str, str], set[int]] = defaultdict(set)
    for (cluster, labels), by_time in series.items():
        times = sorted(by_time)
        pod = (cluster, dict(labels)["pod"])
        falls[pod] |= {t for a, t in pairwise(times) if by_time[t] < by_time[a]}
        assert by_time[times[0]] == 0, (cluster, labels)
    assert all(len(times) <= 1 for times in falls.values())
    assert any(falls.values())


def test_hourly_increases_count_a_reset_and_a_repeated_sample_as_worked_out(hand_built):
    warehouse, pods = hand_built
    rows = warehouse.sql(
        "select usage_hour_at, counter_increase, reset_count from "
        "staging.stg_serving__counter_increases "
        f"where pod = '{pods['vllm']['pod']}' and metric_name = 'vllm:prompt_tokens_total' "
        "order by 1"
    )
    hours = [(r[0].hour, r[1], r[2]) for r in rows]
    assert hours == [(0, Decimal(PROMPT_HOUR_0), 1), (1, Decimal(PROMPT_HOUR_1), 0)]


def test_unit_cost_rows_are_the_counters_and_the_allocated_cost(hand_built):
    warehouse, pods = hand_built
    (cluster,) = warehouse.sql("select distinct cluster_id from staging.stg_kube__pods")[0]
    expected_counts = {
        "vllm": (PROMPT_HOUR_0 + PROMPT_HOUR_1, GENERATED, REQUESTS_A, "acme/chat-8b"),
        "tgi": (12000, 1000, 9, None),
        "triton": (0, 0, 250, "detector"),
    }
    for engine, (prompt, generated, requests, model) in expected_counts.items():
        pod = pods[engine]
        key = pod_key(cluster, pod)
        allocated = warehouse.sql(
            "select team_id, sum(effective_cost) from marts.fct_cost_allocation "
            f"where workload_id like '{key}/%' and cost_component in {COMPUTE} "
            "group by 1 order by 2 desc, 1"
        )
        rows = warehouse.sql(
            "select team_id, model_name, engine, prompt_tokens, generation_tokens, request_count, "
            "effective_cost, cost_per_million_tokens, cost_per_thousand_requests "
            "from marts.fct_inference_unit_cost "
            f"where deployment_name = '{pod['created_by_name'].rsplit('-', 1)[0]}' order by 7 desc"
        )
        assert allocated, f"{key} was allocated no cost"
        assert {r[0]: r[6] for r in rows} == dict(allocated)
        payer = rows[0]  # the team that paid most carries the counts
        assert payer[:6] == (allocated[0][0], model, engine, prompt, generated, requests)
        assert all(r[3:6] == (0, 0, 0) for r in rows[1:])
        cost, tokens = payer[6], prompt + generated
        per_million = (cost / UNIT * 1_000_000 // tokens) * UNIT if tokens else None
        assert payer[7] == per_million
        assert payer[8] == (cost / UNIT * 1000 // requests) * UNIT
        if engine == "vllm":  # on paper: 4,500 tokens in + 360 out, the ratio within 1e-18
            assert abs(payer[7] - cost * 1_000_000 / 4860) < UNIT


def test_bad_serving_files_are_quarantined_and_an_empty_one_is_not(hand_built):
    warehouse, _ = hand_built
    rows = warehouse.sql(
        "select regexp_extract(source_file, '[^/]+$'), metric_name, quarantine_reason, "
        "record_count, example_value from marts.rpt_quarantine "
        "where source_kind = 'metrics/serving' order by 1"
    )
    assert rows == [
        ("nv_inference_count.json", "nv_inference_count", "negative counter value: -5", 1, "-5"),
        (
            "tgi_request_success.truncated.json",
            "(file)",
            "unparseable JSON (truncated, or not JSON)",
            1,
            "<null>",
        ),
    ]


def test_the_cost_column_reconciles_to_the_serving_pods_allocated_cost(generated_warehouse):
    """The generated month: the mart's cost per currency equals fct_cost_allocation's compute cost of
    the pods whose counters are in the landing zone (read here from the files)."""
    warehouse = generated_warehouse
    keys: set[str] = set()
    for path in warehouse.landing.glob("metrics/serving/*/*/*.json"):
        cluster = path.parts[-3]
        for series in json.loads(path.read_text())["data"]["result"]:
            keys.add(f"{cluster}/{series['metric']['namespace']}/{series['metric']['pod']}")
    assert len(keys) > 3
    allocated = warehouse.sql(
        "select billing_currency, sum(effective_cost), sum(billed_cost) "
        "from marts.fct_cost_allocation where cost_component in " + COMPUTE + " and "
        "regexp_extract(workload_id, '^([^/]*/[^/]*/[^/]*)', 1) in ("
        + ", ".join(f"'{k}'" for k in sorted(keys))
        + ") group by 1 order by 1"
    )
    mart = warehouse.sql(
        "select billing_currency, sum(effective_cost), sum(billed_cost) "
        "from marts.fct_inference_unit_cost where billing_currency is not null group by 1 order by 1"
    )
    assert mart == allocated and allocated[0][1] > 0


def test_the_tokens_are_the_landed_counters_increases(generated_warehouse):
    """The generated month's tokens and requests, recomputed from the landed files with the reset rule
    (a fall is a restart: the new value is the rise), equal the mart's totals per engine."""
    warehouse = generated_warehouse
    samples: dict[tuple, dict[int, Decimal]] = defaultdict(dict)
    for path in warehouse.landing.glob("metrics/serving/*/*/*.json"):
        for series in json.loads(path.read_text())["data"]["result"]:
            key = (path.parts[-3], tuple(sorted(series["metric"].items())))
            samples[key].update({int(t): Decimal(v) for t, v in series["values"]})
    measure = {
        "vllm:prompt_tokens_total": "tokens",
        "vllm:generation_tokens_total": "tokens",
        "tgi_request_input_length_sum": "tokens",
        "tgi_request_generated_tokens_sum": "tokens",
        "vllm:request_success_total": "requests",
        "tgi_request_success": "requests",
        "nv_inference_request_success": "requests",
    }
    engines = {"vllm": "vllm", "tgi_": "tgi", "nv_i": "triton"}
    totals: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    resets = 0
    for (_, labels), by_time in samples.items():
        name = dict(labels)["__name__"]
        if name not in measure:
            continue
        values = [by_time[t] for t in sorted(by_time)]
        for before, now in pairwise(values):
            totals[(engines[name[:4]], measure[name])] += now - before if now >= before else now
            resets += now < before
    assert resets > 0  # the month has restarts
    mart = warehouse.sql(
        "select engine, sum(total_tokens), sum(request_count) "
        "from marts.fct_inference_unit_cost group by 1 order by 1"
    )
    assert {e: (t, r) for e, t, r in mart} == {
        e: (totals[(e, "tokens")], totals[(e, "requests")]) for e in ("tgi", "triton", "vllm")
    }


COUNTERS_ONLY = ("-s", "base_serving__series stg_serving__counter_increases")


def counter_rows(warehouse: Warehouse, path: Path) -> list[tuple]:
    """stg_serving__counter_increases of a warehouse file, sorted, without its bookkeeping column."""
    return warehouse.sql(
        "select * exclude (inputs_loaded_at) from staging.stg_serving__counter_increases order by all",
        path,
    )


def test_counter_increases_recompute_from_the_first_late_rise_and_equal_a_fresh_build(tmp_path):
    """Serving counters landed late, three times (the two serving models alone, on a landing zone of
    serving files): a file continuing a series after a gap (its sample before them lies in a file that
    ends hours before), then a sample between two landed ones, then a file removed. Each incremental
    run keeps the hours before the first late rise as they were and equals a fresh build, row for row."""
    landing = tmp_path / "landing"
    folder = landing / "metrics" / "serving" / "c1" / DAY
    folder.mkdir(parents=True)
    a = {"__name__": "vllm:prompt_tokens_total", "namespace": "ns", "pod": "a", "model_name": "m"}
    b = {"__name__": "tgi_request_count", "namespace": "ns", "pod": "b"}
    c = {**a, "pod": "c"}

    def land(name: str, series: list[tuple[dict[str, str], list[tuple[int, str]]]]) -> None:
        (folder / name).write_text(response(series), encoding="utf-8")

    land("vllm_prompt_tokens_total.json", [(a, at(OFFSETS, VLLM_PROMPT))])
    land("tgi_request_count.json", [(b, at(TGI_OFFSETS, TGI_COUNT))])
    warehouse = Warehouse(landing, tmp_path / "incremental" / "gpucost.duckdb", tmp_path)
    fresh = tmp_path / "fresh" / "gpucost.duckdb"

    def hours_loaded() -> dict[int, set[str]]:
        rows = warehouse.sql(
            "select hour(usage_hour_at), cast(inputs_loaded_at as string)"
            " from staging.stg_serving__counter_increases"
        )
        by_hour: dict[int, set[str]] = defaultdict(set)
        for hour, loaded_at in rows:
            by_hour[hour].add(loaded_at)
        return by_hour

    def check_equals_fresh() -> None:
        result = warehouse.dbt("run", *COUNTERS_ONLY, warehouse=fresh)
        assert result.returncode == 0, result.stdout[-4000:]
        assert counter_rows(warehouse, warehouse.path) == counter_rows(warehouse, fresh)
        fresh.unlink()

    assert warehouse.dbt("run", *COUNTERS_ONLY).returncode == 0
    (first,) = {loaded for loads in hours_loaded().values() for loaded in loads}

    # 1. pod a continues at +3h10 after its last sample at +1h05; pod c starts then (no rise yet)
    late = [(a, at([11400, 11700], ["2600", "2700"])), (c, at([11400, 11700], ["5", "9"]))]
    land("vllm_prompt_tokens_total.late.json", late)
    assert warehouse.dbt("run", *COUNTERS_ONLY).returncode == 0
    check_equals_fresh()
    by_hour = hours_loaded()
    assert {h: loads == {first} for h, loads in by_hour.items()} == {0: True, 1: True, 3: False}
    (rises,) = warehouse.sql(
        "select list(counter_increase order by pod) from staging.stg_serving__counter_increases"
        " where hour(usage_hour_at) = 3"
    )
    assert rises[0] == [
        Decimal(2700 - 2000),
        Decimal(4),
    ]  # a: from its sample at +1h05; c: one rise

    # 2. a sample of pod b between +30 min and +2 h: hours 1 on are recomputed, hour 0 is kept
    land("tgi_request_count.late.json", [(b, at([5400], ["8"]))])
    assert warehouse.dbt("run", *COUNTERS_ONLY).returncode == 0
    check_equals_fresh()
    assert hours_loaded()[0] == {first}
    assert all(first not in hours_loaded()[h] for h in (1, 3))

    # 3. that file removed: a tombstone, everything recomputed
    (folder / "tgi_request_count.late.json").unlink()
    assert warehouse.dbt("run", *COUNTERS_ONLY).returncode == 0
    check_equals_fresh()
    assert first not in {loaded for loads in hours_loaded().values() for loaded in loads}
