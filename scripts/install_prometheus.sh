#!/usr/bin/env bash
# Install what the collector's test needs (tests/python/test_collect.py): Debian's prometheus package,
# which brings the prometheus server and promtool (2.42 on Debian 12). The test starts its own server on
# 127.0.0.1 with a temporary storage folder; nothing is started here.
# Idempotent: does nothing when both binaries are on PATH.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
echo "Installing Debian's prometheus (apt-get install -y prometheus: the server and promtool)"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends: no node exporter or alertmanager
$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# the package may start its own service on :9090; the test needs only the binaries
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    $SUDO systemctl stop prometheus || true
fi
promtool --version >/dev/null 2>&1 || { echo "promtool does not start" >&2; exit 1; }
prometheus --version 2>&1 | head -1
