#!/usr/bin/env bash
# Install what the dashboard's browser test needs, without downloading a browser build:
# Debian's chromium (apt) and playwright-core from npm (tests/browser, `npm ci`).
# Idempotent: does nothing that is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
    echo "Installing Debian's chromium (apt-get install -y chromium)"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq chromium >/dev/null
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing: install Node.js 18+ and npm (apt-get install -y nodejs npm)" >&2
    exit 1
fi

if [ ! -d tests/browser/node_modules/playwright-core ] \
    || [ tests/browser/package-lock.json -nt tests/browser/node_modules/.package-lock.json ]; then
    echo "Installing playwright-core (npm ci in tests/browser; no browser download)"
    (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi

/usr/bin/chromium --version 2>/dev/null || { echo "chromium does not start" >&2; exit 1; }
