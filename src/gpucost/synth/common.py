"""Small helpers of the generator: random ids, and money, time, label and tag formatting."""

from __future__ import annotations

import hashlib
import json
import math
import random
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

from gpucost.synth.reference import K8S_ALNUM, TEN_DP


def random_hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def random_uuid(rng: random.Random) -> str:
    h = random_hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"


def random_gpu_uuid(rng: random.Random) -> str:
    """A GPU UUID as nvidia-smi and the DCGM exporter print it: GPU-8-4-4-4-12 hex."""
    h = random_hex(rng, 32)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def random_suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(K8S_ALNUM) for _ in range(n))


def poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:  # normal approximation, only hit by very large fleets
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit = math.exp(-lam)
    k, p = 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def loguniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def align(seconds: float, step: int) -> int:
    return max(step, round(seconds / step) * step)


def money(value: Decimal) -> str:
    return format(value.quantize(TEN_DP, rounding=ROUND_HALF_EVEN), "f")


def iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sorted_labels(labels: dict[str, str]) -> dict[str, str]:
    return dict(sorted(labels.items()))


def image_digest(image: str) -> str:
    repo = image.rsplit(":", 1)[0]
    digest = hashlib.sha256(image.encode()).hexdigest()
    return f"docker-pullable://{repo}@sha256:{digest}"


def sku_id(name: str) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256(name.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:16])


def tags_json(d: dict[str, str]) -> str:
    return json.dumps(d, separators=(",", ":"), sort_keys=True) if d else ""
