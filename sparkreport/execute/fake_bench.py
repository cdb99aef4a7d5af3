"""The ``fake`` workload's program: prints a trtllm-bench report with synthetic numbers.

Deterministic for a seed, with Gaussian noise, no GPU. It exercises everything around a real
benchmark — process groups, timeouts, crashes, the parser registry (its output is read by
the ``trtllm-log`` parser), redaction — in tests and CI::

    python -m sparkreport.execute.fake_bench --seed 7 --throughput 120 --noise 0.01
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

REPORT = """\
[TensorRT-LLM][INFO] [MemUsageChange] Allocated {kv:.2f} GiB for max tokens in paged KV cache ({tokens}).
[TensorRT-LLM][INFO] Peak memory during memory usage profiling (torch + non-torch): {peak:.2f} GiB, \
available KV cache memory when calculating max tokens: {avail:.2f} GiB, fraction is set 0.9, \
kv size is 131072. device total memory {total:.2f} GiB, tmp kv_mem 1.00 GiB
===========================================================
= ENGINE DETAILS
===========================================================
Model:                  {model}
TensorRT-LLM Version:   fake-1.0
===========================================================
= REQUEST DETAILS
===========================================================
Number of requests:             {requests}
Average Input Length (tokens):  128.0000
Average Output Length (tokens): {output_len:.4f}
===========================================================
= PERFORMANCE OVERVIEW
===========================================================
Request Throughput (req/sec):                     {req_s:.4f}
Total Output Throughput (tokens/sec):             {tok_s:.4f}
Total Latency (ms):                               {latency_ms:.4f}
Average request latency (ms):                     {avg_latency_ms:.4f}
"""


def main(argv: list[str] | None = None) -> int:
    """Print one synthetic report (or crash / hang on request)."""
    parser = argparse.ArgumentParser(description="print a synthetic trtllm-bench report")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="fake/model")
    parser.add_argument("--throughput", type=float, default=120.0, help="mean output tok/s")
    parser.add_argument("--noise", type=float, default=0.01, help="relative sd of the noise")
    parser.add_argument("--kv-gib", type=float, default=40.0)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to 'run' first")
    parser.add_argument("--fail", action="store_true", help="crash with exit code 3")
    parser.add_argument("--hang", action="store_true", help="never finish (for timeouts)")
    parser.add_argument("--print-env", action="append", default=[], help="echo a variable (tests)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    for name in args.print_env:
        print(f"env {name}={os.environ.get(name, '')}", flush=True)
    time.sleep(args.sleep)
    if args.hang:
        print("fake_bench: hanging", flush=True)
        while True:
            time.sleep(3600)
    if args.fail:
        print("fake_bench: simulated crash", flush=True)
        return 3
    tok_s = args.throughput * (1.0 + args.noise * rng.gauss(0.0, 1.0))
    total_tokens = args.requests * args.output_len
    latency_ms = 1000.0 * total_tokens / tok_s
    kv = args.kv_gib * (1.0 + args.noise * rng.gauss(0.0, 1.0))
    print(REPORT.format(kv=kv, tokens=int(kv * 2**30 / 131072), peak=kv + 26.0, avail=kv / 0.9,
                        total=119.64, model=args.model, requests=args.requests,
                        output_len=float(args.output_len), req_s=args.requests / latency_ms * 1000.0,
                        tok_s=tok_s, latency_ms=latency_ms, avg_latency_ms=latency_ms / 2.0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
