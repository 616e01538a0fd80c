"""The ``gpucost`` command: generate a month, build the warehouse, print the chargeback.

    gpucost demo                      generate the sample month, dbt build, print the summary
    gpucost generate --out landing    write a realistic month of raw files (FOCUS, DCGM, kube)
    gpucost build [-- dbt args]       dbt build against the landing zone
    gpucost summary                   print the chargeback summary from the warehouse
    gpucost review list|accept|...    the attribution review queue; a decision is an override row

Paths default to the project's own folders (``landing/``, ``warehouse/gpucost.duckdb``) and follow
the same environment variables as ``profiles.yml``: GPUCOST_LANDING_DIR, GPUCOST_WAREHOUSE.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from gpucost.commands.project import (
    DEFAULT_LANDING,
    DEFAULT_WAREHOUSE,
    dbt_env,
    dbt_executable,
    find_project_dir,
    landing_dir,
    resolve_path,
    run_dbt,
    warehouse_path,
    with_retrain,
)
from gpucost.commands.report import chargeback_summary, read_summary_rows
from gpucost.synth.hourly import RESOLUTIONS

# the paths and the dbt runner live in gpucost.commands.project (every subcommand imports them
# from there, never from this module: no import loop); these names stay importable from here
__all__ = [
    "DEFAULT_LANDING",
    "DEFAULT_WAREHOUSE",
    "build_parser",
    "dbt_env",
    "dbt_executable",
    "find_project_dir",
    "landing_dir",
    "main",
    "run_dbt",
    "warehouse_path",
]


def cmd_generate(args: argparse.Namespace) -> int:
    from gpucost.synth import MonthConfig, generate_month

    project_dir = find_project_dir()
    out = landing_dir(project_dir, args.out)
    if out.exists() and any(out.iterdir()):
        if not args.force:
            print(f"gpucost: {out} is not empty; pass --force to replace it", file=sys.stderr)
            return 2
        shutil.rmtree(out)
    started = time.monotonic()
    print(
        f"Generating {args.days} days, {args.nodes} GPU nodes, {args.step}s samples, "
        f"seed {args.seed} into {out}",
        flush=True,
    )
    config = MonthConfig(
        seed=args.seed,
        nodes=args.nodes,
        days=args.days,
        step_seconds=args.step,
        start=args.start,
        clusters=args.clusters,
        slurm_nodes=getattr(args, "slurm_nodes", 2),
        resolution=getattr(args, "resolution", "raw"),
    )
    summary = generate_month(
        out, config, progress=lambda message: print(f"  {message}", flush=True)
    )
    bill_format = getattr(args, "bill_format", "focus")
    if bill_format != "focus":
        from gpucost.synth.bill_formats import render_bill

        written = render_bill(out, bill_format)
        names = ", ".join(str(path.relative_to(out)) for path in written)
        print(f"  bill rendered as {bill_format}: {names}", flush=True)
    print(
        f"Wrote {summary['files']} files: {summary['bill_lines']} bill lines "
        f"(billed {summary['billed_total']:.2f} USD), {summary['pods']} pods "
        f"({summary['untagged_pods']} without a project label), {summary['samples']} DCGM samples"
        f"{' (landed as hourly aggregates)' if summary['resolution'] == 'hourly' else ''} "
        f"in {time.monotonic() - started:.1f}s",
        flush=True,
    )
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    project_dir = find_project_dir()
    landing = landing_dir(project_dir, args.landing)
    if not landing.is_dir():
        print(
            f"gpucost: landing zone {landing} does not exist; run `gpucost generate` or set "
            "GPUCOST_LANDING_DIR to the folder holding billing/ and metrics/",
            file=sys.stderr,
        )
        return 2
    dbt_args = [arg for arg in args.dbt_args if arg != "--"]
    if args.retrain:
        try:
            dbt_args = with_retrain(dbt_args)
        except ValueError as error:
            print(f"gpucost: --retrain: {error}", file=sys.stderr)
            return 2
    warehouse = warehouse_path(project_dir, args.warehouse)
    code = run_dbt(project_dir, landing, warehouse, dbt_args)
    if code == 0 and (not dbt_args or dbt_args[0] in ("build", "run")):
        code = publish_after_build(project_dir, warehouse)
    return code


def publish_after_build(project_dir: Path, warehouse: Path) -> int:
    """Publish the marts as Parquet for BI readers (see docs/dashboard.md), when available."""
    try:
        from gpucost.commands.publish import publish_marts
    except ImportError:
        return 0
    out_dir = resolve_path(
        project_dir, os.environ.get("GPUCOST_PARQUET_DIR", str(warehouse.parent / "parquet"))
    )
    try:
        publish_marts(warehouse, out_dir)
    except Exception as error:  # a failed publish must not hide a good build's exit code
        from gpucost.commands.safe_output import first_line, one_line_error

        reason = one_line_error(error) or first_line(error)
        print(f"gpucost: publishing Parquet to {out_dir} failed: {reason}", file=sys.stderr)
        return 1
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    project_dir = find_project_dir()
    warehouse = warehouse_path(project_dir, args.warehouse)
    if not warehouse.is_file():
        print(f"gpucost: no warehouse at {warehouse}; run `gpucost build` first", file=sys.stderr)
        return 2
    text, reconciled = chargeback_summary(read_summary_rows(warehouse), warehouse)
    print(text)
    return 0 if reconciled else 1


def cmd_demo(args: argparse.Namespace) -> int:
    code = cmd_generate(args)
    if code:
        return code
    args.dbt_args = ["build"]
    args.landing = args.out
    code = cmd_build(args)
    if code:
        print(f"gpucost: dbt build failed (exit {code})", file=sys.stderr)
        return code
    return cmd_summary(args)


def _add_generate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        help=f"landing zone to write (default ${{GPUCOST_LANDING_DIR}} or {DEFAULT_LANDING})",
    )
    parser.add_argument(
        "--nodes", type=int, default=16, help="GPU nodes, half H100 half A100 (default 16)"
    )
    parser.add_argument("--days", type=int, default=30, help="days to generate (default 30)")
    parser.add_argument(
        "--step", type=int, default=300, help="metric sample interval, seconds (default 300)"
    )
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    parser.add_argument(
        "--start", default="2026-10-01", help="first day, YYYY-MM-DD (default 2026-10-01)"
    )
    parser.add_argument("--clusters", type=int, default=2, help="Kubernetes clusters (default 2)")
    parser.add_argument(
        "--slurm-nodes",
        type=int,
        default=2,
        help="GPU nodes of a Slurm queue with sacct dumps (default 2; 0: none)",
    )
    parser.add_argument(
        "--resolution",
        choices=RESOLUTIONS,
        default="raw",
        help="telemetry as raw samples (default), or the hourly files `gpucost collect "
        "--resolution hourly` would land from them (one sample per series and hour)",
    )
    parser.add_argument("--force", action="store_true", help="replace a non-empty landing zone")
    parser.add_argument(
        "--bill-format",
        default="focus",
        choices=["focus", "cur-legacy", "cur2", "gcp", "azure", "oci", "onprem"],
        help="bill as FOCUS (default) or a provider's native export "
        "(see gpucost.synth.bill_formats)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucost", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    generate = sub.add_parser("generate", help="write a realistic month of raw files")
    _add_generate_options(generate)
    generate.set_defaults(func=cmd_generate)

    build = sub.add_parser("build", help="dbt build against the landing zone")
    build.add_argument("--landing", help="landing zone (default $GPUCOST_LANDING_DIR or landing)")
    build.add_argument(
        "--warehouse", help=f"DuckDB file (default $GPUCOST_WAREHOUSE or {DEFAULT_WAREHOUSE})"
    )
    build.add_argument(
        "--retrain",
        action="store_true",
        help="train a new attribution model version (var gpucost_attribution_retrain: true)",
    )
    build.add_argument(
        "dbt_args", nargs=argparse.REMAINDER, help="dbt command and flags (default: build)"
    )
    build.set_defaults(func=cmd_build)

    summary = sub.add_parser("summary", help="print the chargeback summary")
    summary.add_argument("--warehouse", help=f"DuckDB file (default {DEFAULT_WAREHOUSE})")
    summary.set_defaults(func=cmd_summary)

    demo = sub.add_parser("demo", help="generate the sample month, build, print the summary")
    _add_generate_options(demo)
    demo.add_argument("--warehouse", help=f"DuckDB file (default {DEFAULT_WAREHOUSE})")
    # gpucost demo builds as `gpucost build` does (cmd_build): that command's option defaults too
    demo.set_defaults(func=cmd_demo, landing=None, retrain=False)
    _add_plugins(sub)
    return parser


# Subcommands contributed by other modules: each exposes ``add_parser(subparsers)``, which adds its
# parser(s) and sets ``func``. A module that is missing is skipped.
PLUGIN_MODULES = (
    "gpucost.commands.publish",
    "gpucost.commands.statements",
    "gpucost.commands.alerts",
    "gpucost.commands.focus_export",
    "gpucost.validation.validate",
    "gpucost.commands.gate",
    "gpucost.commands.benchmark",
    "gpucost.commands.attribution_benchmark",
    "gpucost.commands.openmetrics",
    "gpucost.commands.collect",
    "gpucost.commands.review",
)


def _add_plugins(sub: argparse._SubParsersAction) -> None:
    import importlib

    for name in PLUGIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            continue
        module.add_parser(sub)


DEBUG_ENV = "GPUCOST_DEBUG"


def main(argv: list[str] | None = None) -> int:
    """Run one command. An error of a kind the user can fix (a locked warehouse, a path that cannot
    be written or is under a file, a missing file) is one line on stderr and exit code 2, never a
    traceback; so is any other error, unless GPUCOST_DEBUG=1 asks for the traceback."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("gpucost: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        from gpucost.commands.safe_output import first_line, one_line_error

        message = one_line_error(error)
        if message is None:
            first = first_line(error)
            message = (
                f"{type(error).__name__}: {first} (unexpected; {DEBUG_ENV}=1 shows the traceback)"
            )
        print(f"gpucost {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
