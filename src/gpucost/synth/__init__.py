"""Synthetic landing zones: :func:`generate_month` writes the month a :class:`MonthConfig` says.

Modules: config (MonthConfig), reference (static data), common (ids and formatting), fleet,
scheduling (workloads), telemetry and volumes (metric writers), bills (the FOCUS writer), inventory
(org mapping, pod specs, truth), generator (the entry point), generator_slurm (the Slurm queue),
bill_formats (the bill in providers' native formats).
"""

from gpucost.synth.config import MonthConfig
from gpucost.synth.generator import generate_month

__all__ = ["MonthConfig", "generate_month"]
