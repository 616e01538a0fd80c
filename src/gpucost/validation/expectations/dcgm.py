"""DCGM exporter series as Prometheus query_range JSON: metrics/dcgm/**/*.json.

Suites dcgm_responses (one row per file) and dcgm_samples (one row per sample); see
gpucost.validation.expectations._prometheus for how the files are flattened.
"""

from __future__ import annotations

from functools import partial

import great_expectations as gx
import great_expectations.expectations as gxe
from great_expectations.expectations.row_conditions import Column

from gpucost.validation.expectations import _prometheus
from gpucost.validation.expectations.base import Source

RESPONSES_SUITE = "dcgm_responses"
SAMPLES_SUITE = "dcgm_samples"

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
# The fields the warehouse reads (stg_dcgm__gpu_samples) ...
WAREHOUSE_FIELDS = (GPU_UTIL, GR_ENGINE_ACTIVE, "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
# ... and the other fields dcgm-exporter exports (its etc/default-counters.csv and
# etc/dcp-metrics-included.csv, commented-out ones included): landing them is harmless.
KNOWN_DCGM_FIELDS = (
    *WAREHOUSE_FIELDS,
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
    "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "DCGM_FI_DEV_RETIRED_SBE",
    "DCGM_FI_DEV_RETIRED_DBE",
    "DCGM_FI_DEV_RETIRED_PENDING",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
    "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES",
)

# Frame columns from the series' labels (DuckDB expressions over the label map).
LABELS = {
    "UUID": "nullif(labels['UUID'], '')",
    "Hostname_or_hostname": (
        "coalesce(nullif(labels['Hostname'], ''), nullif(labels['hostname'], ''))"
    ),
    "pod": "nullif(labels['pod'], '')",
}


def build_samples_suite() -> gx.ExpectationSuite:
    metric = Column("metric_name")
    return gx.ExpectationSuite(
        name=SAMPLES_SUITE,
        expectations=[
            gxe.ExpectColumnValuesToBeInSet(
                column="metric_name",
                value_set=list(KNOWN_DCGM_FIELDS),
                meta={"column": "__name__"},
                description="The metric is a known DCGM field (dcgm-exporter's counters).",
            ),
            gxe.ExpectColumnValuesToNotBeNull(
                column="UUID", description="The UUID label (the GPU) is present."
            ),
            gxe.ExpectColumnValuesToNotBeNull(
                column="Hostname_or_hostname",
                meta={"column": "Hostname/hostname"},
                description="The Hostname or hostname label (the node) is present.",
            ),
            *_prometheus.sample_expectations(),
            gxe.ExpectColumnValuesToBeBetween(
                column="value_number",
                min_value=0,
                max_value=100,
                row_condition=metric == GPU_UTIL,
                meta={"column": f"value of {GPU_UTIL}"},
                description=f"{GPU_UTIL} is a percentage, 0 to 100.",
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="value_number",
                min_value=0,
                max_value=1,
                row_condition=metric == GR_ENGINE_ACTIVE,
                meta={"column": f"value of {GR_ENGINE_ACTIVE}"},
                description=f"{GR_ENGINE_ACTIVE} is a ratio, 0 to 1.",
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="value_number",
                min_value=0,
                row_condition=metric.is_in(["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"]),
                meta={"column": "value of DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_POWER_USAGE"},
                description="Framebuffer used (MiB) and power (W) are not negative.",
            ),
        ],
        meta={"notes": "One row per DCGM sample, as read_prometheus_series flattens them."},
    )


SOURCE = Source(
    name="dcgm",
    title="DCGM GPU telemetry",
    folder="metrics/dcgm",
    patterns=("metrics/dcgm/**/*.json", "metrics/dcgm/**/*.json.gz"),
    required=False,
    suites=lambda: [_prometheus.responses_suite(RESPONSES_SUITE), build_samples_suite()],
    load=partial(
        _prometheus.load,
        prefix="dcgm",
        labels=LABELS,
        locate=("Hostname_or_hostname", "UUID", "pod"),
    ),
)
