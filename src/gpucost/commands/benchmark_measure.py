"""How ``gpucost benchmark`` measures a command and describes the machine it ran on: a subprocess's
wall time and the peak resident memory of its whole process tree (from /proc), and the CPUs,
memory and versions recorded on every row."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path


def machine_info() -> dict[str, str]:
    cpu_model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_total_gb = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_total_gb = f"{int(line.split()[1]) / 1024 / 1024:.1f}"
                break
    except OSError:
        pass

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return ""

    return {
        "nproc": str(os.cpu_count() or ""),
        "mem_total_gb": mem_total_gb,
        "cpu_model": cpu_model,
        "python": platform.python_version(),
        "duckdb": version("duckdb"),
        "dbt_core": version("dbt-core"),
        "dbt_duckdb": version("dbt-duckdb"),
    }


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc/<pid>/task/<tid>/children (or a /proc scan)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_measured(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple:
    """Run ``command``, its output to ``log``; returns (exit code, wall seconds, peak RSS in MB).

    Peak RSS: every 0.2 s the VmRSS of the process and all its descendants are summed (the tree's
    resident memory at that instant) and the maximum is kept; the dbt process's own VmHWM (the
    kernel's high-water mark, exact even between polls) is read on every poll too, and the larger
    of the two is reported. ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is not used: it is the maximum
    over every child this Python process has ever waited for, so the second build would report the
    first build's peak whenever that was higher."""
    peak_kb = 0
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        while process.poll() is None:
            tree = process_tree(process.pid)
            tree_kb = sum(status_kb(pid, "VmRSS") for pid in tree)
            peak_kb = max(peak_kb, tree_kb, status_kb(process.pid, "VmHWM"))
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.2)
    seconds = time.perf_counter() - started
    return process.returncode, seconds, peak_kb / 1024
