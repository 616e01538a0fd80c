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
    return subprocess.call(command, cwd=project_dir, env=dbt_env(landing, warehouse))


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
