"""Where the project, its landing zone and its warehouse are, and how dbt runs on them.

Paths default to the project's own folders (``landing/``, ``warehouse/gpucost.duckdb``) and follow
the same environment variables as ``profiles.yml``: GPUCOST_LANDING_DIR, GPUCOST_WAREHOUSE. Every
subcommand imports these from here (the CLI module imports the subcommands: no import loop).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_LANDING = "landing"
DEFAULT_WAREHOUSE = "warehouse/gpucost.duckdb"


def find_project_dir(start: Path | None = None) -> Path:
    """The dbt project folder: GPUCOST_PROJECT_DIR, else the nearest parent with dbt_project.yml
    (from the current folder, then from this package's source checkout)."""
    env = os.environ.get("GPUCOST_PROJECT_DIR")
    if env:
        return Path(env).resolve()
    candidates = [start or Path.cwd(), Path(__file__).resolve().parent]
    for candidate in candidates:
        for folder in (candidate, *candidate.parents):
            if (folder / "dbt_project.yml").is_file():
                return folder
    raise SystemExit(
        "gpucost: cannot find dbt_project.yml; run from the project folder "
        "or set GPUCOST_PROJECT_DIR"
    )


def resolve_path(project_dir: Path, value: str) -> Path:
    """``value`` as a path, relative to the project folder unless absolute."""
    path = Path(value)
    return path if path.is_absolute() else project_dir / path


def landing_dir(project_dir: Path, override: str | None = None) -> Path:
    return resolve_path(
        project_dir, override or os.environ.get("GPUCOST_LANDING_DIR", DEFAULT_LANDING)
    )


def warehouse_path(project_dir: Path, override: str | None = None) -> Path:
    return resolve_path(
        project_dir, override or os.environ.get("GPUCOST_WAREHOUSE", DEFAULT_WAREHOUSE)
    )


def dbt_executable() -> str:
    """The dbt of this Python environment (its venv's bin), else the one on PATH."""
    return (
        shutil.which("dbt", path=str(Path(sys.executable).parent)) or shutil.which("dbt") or "dbt"
    )


def dbt_env(landing: Path, warehouse: Path) -> dict[str, str]:
    """The environment a dbt run of this project needs: which landing zone, which warehouse file."""
    return os.environ | {
        "GPUCOST_LANDING_DIR": str(landing),
        "GPUCOST_WAREHOUSE": str(warehouse),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }


def run_dbt(project_dir: Path, landing: Path, warehouse: Path, dbt_args: list[str]) -> int:
    """Run ``dbt build`` (or the given dbt command) on the project; returns dbt's exit code."""
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    command = [dbt_executable(), *(dbt_args or ["build"]), "--project-dir", str(project_dir)]
    command += ["--profiles-dir", str(project_dir)]
    print("$ " + " ".join(command), flush=True)
    started = time.time()
    code = subprocess.call(command, cwd=project_dir, env=dbt_env(landing, warehouse))
    hint = out_of_memory_hint(run_results_path(project_dir, dbt_args), started) if code else None
    if hint:
        print(f"gpucost: {hint}", file=sys.stderr)
    return code


def profile_settings() -> tuple[int, str]:
    """The threads (models dbt runs at once) and memory_limit that profiles.yml gives dbt (same
    env vars, same defaults). dbt-duckdb does not pass the threads to DuckDB
    (GPUCOST_DUCKDB_THREADS does: gpucost.engines.duckdb_plugin)."""
    return int(os.environ.get("GPUCOST_THREADS", "2")), os.environ.get(
        "GPUCOST_MEMORY_LIMIT", "8GB"
    )


def run_results_path(project_dir: Path, dbt_args: list[str]) -> Path:
    """Where a dbt run with these arguments writes run_results.json: --target-path, else
    DBT_TARGET_PATH, else the project's target/ (dbt_project.yml)."""
    target = os.environ.get("DBT_TARGET_PATH") or "target"
    for i, arg in enumerate(dbt_args):
        if arg == "--target-path" and i + 1 < len(dbt_args):
            target = dbt_args[i + 1]
        elif arg.startswith("--target-path="):
            target = arg.split("=", 1)[1]
    return (project_dir / target / "run_results.json").resolve()


def out_of_memory_hint(run_results: Path, since: float) -> str | None:
    """One line of advice when the dbt run that wrote ``run_results`` (at or after ``since``, a
    ``time.time()``) failed because DuckDB ran out of memory: the models, the settings in force and
    the ones that bound it (docs/usage.md). None for any other failure, or no readable results."""
    try:
        if run_results.stat().st_mtime < since:
            return None
        results = json.loads(run_results.read_text(encoding="utf-8"))["results"]
        models = sorted(
            str(result["unique_id"]).rsplit(".", 1)[-1]
            for result in results
            if result.get("status") == "error"
            and "Out of Memory Error" in str(result.get("message") or "")
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not models:
        return None
    threads, limit = profile_settings()
    return (
        f"DuckDB ran out of memory in {', '.join(models)} (GPUCOST_MEMORY_LIMIT {limit},"
        f" GPUCOST_THREADS {threads} models at once). A telemetry reader holds whole landed files:"
        " run one model at a time (GPUCOST_THREADS=1), or raise GPUCOST_MEMORY_LIMIT if the machine"
        " has the memory; see docs/usage.md"
    )


RETRAIN_VAR = "gpucost_attribution_retrain"


def with_retrain(dbt_args: list[str]) -> list[str]:
    """``dbt_args`` (default ``build``) with var gpucost_attribution_retrain set to true: the build
    trains a new attribution model version whatever changed. Merged into the ``--vars`` the
    arguments already pass (YAML or JSON); raises ValueError (one line) when they cannot be read."""
    import yaml

    args = list(dbt_args or ["build"])
    for i, arg in enumerate(args):
        value = None
        if arg == "--vars" and i + 1 < len(args):
            value, span = args[i + 1], slice(i, i + 2)
        elif arg.startswith("--vars="):
            value, span = arg[len("--vars=") :], slice(i, i + 1)
        if value is None:
            continue
        try:
            given = yaml.safe_load(value) or {}
        except yaml.YAMLError as error:
            raise ValueError(f"--vars is not YAML: {str(error).splitlines()[0]}") from None
        if not isinstance(given, dict):
            raise ValueError(f"--vars must be a mapping, got {value!r}")
        args[span] = ["--vars", json.dumps({**given, RETRAIN_VAR: True}, default=str)]
        return args
    return [*args, "--vars", json.dumps({RETRAIN_VAR: True})]
