"""The ``torch`` reference workload: a Llama/Qwen2-shaped decoder with random weights.

Runs on any CUDA GPU with PyTorch and downloads nothing. It:

1. builds the architecture from a config (a preset of published shapes, overridable field by
   field with Hugging Face config names; completed by ``transformers.AutoConfig`` when
   transformers is installed) and fills the weights with random numbers on the GPU —
   random weights cost the same compute as trained ones, and the report says they were random;
2. sizes a static KV cache as ``kv_cache_fraction × free memory after the weights`` (as
   TensorRT-LLM does) and allocates it as one pool;
3. runs ``num_requests`` requests in static batches of ``batch_size``: one prefill of
   ``input_len`` tokens, then greedy decoding of exactly ``output_len`` tokens (no early stop),
   timing prefill and every decode step with CUDA events; all requests are issued at t = 0,
   as trtllm-bench's throughput mode does, so TTFT includes the wait for earlier batches.
   The decode step is captured once per batch size as a CUDA graph (``decode: cuda-graph``,
   the default): one step is then one graph launch instead of ~15 kernel launches per layer,
   so the measurement is bound by the GPU, not by how fast the host issues kernels (eager
   decoding of these shapes kept an H100 57–71 % busy and its throughput varied with the host);
   ``decode: eager`` keeps the plain loop for comparison;
4. writes a JSON report with the canonical metrics and the memory state at each phase
   (free/used device memory from ``cudaMemGetInfo``, PyTorch's allocator, the process RSS).

Only the standard library and torch are imported (transformers optionally), so it runs in a
chroot or container that has PyTorch but not sparkreport's own dependencies::

    python -m sparkreport.execute.torch_bench --spec spec.json --out report.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

FORMAT = "sparkreport-torch-bench"
FORMAT_VERSION = 1
GIB = 2**30

#: Published shapes (Hugging Face config names). Weights are random; only shapes matter.
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2-0.5b": {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24,
                   "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
                   "vocab_size": 151936, "tie_word_embeddings": True, "rope_theta": 1000000.0,
                   "rms_norm_eps": 1e-6, "max_position_embeddings": 32768},
    "qwen2-1.5b": {"model_type": "qwen2", "hidden_size": 1536, "num_hidden_layers": 28,
                   "num_attention_heads": 12, "num_key_value_heads": 2, "intermediate_size": 8960,
                   "vocab_size": 151936, "tie_word_embeddings": True, "rope_theta": 1000000.0,
                   "rms_norm_eps": 1e-6, "max_position_embeddings": 32768},
    "qwen2.5-7b": {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
                   "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
                   "vocab_size": 152064, "tie_word_embeddings": False, "rope_theta": 1000000.0,
                   "rms_norm_eps": 1e-6, "max_position_embeddings": 32768},
    "llama-3.2-1b": {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
                     "vocab_size": 128256, "tie_word_embeddings": True, "rope_theta": 500000.0,
                     "rms_norm_eps": 1e-5, "max_position_embeddings": 131072},
    "llama-3-8b": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                   "vocab_size": 128256, "tie_word_embeddings": False, "rope_theta": 500000.0,
                   "rms_norm_eps": 1e-5, "max_position_embeddings": 8192},
}

_SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "intermediate_size", "vocab_size", "tie_word_embeddings", "rope_theta",
               "rms_norm_eps", "max_position_embeddings")


def resolve_config(preset: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """The architecture's config: preset + overrides, completed by transformers when present."""
    config: dict[str, Any] = dict(PRESETS[preset]) if preset else {"model_type": "llama"}
    config.update(overrides)
    model_type = str(config.pop("model_type", "llama"))
    source = "preset" if preset else "config"
    if all(key in config for key in _SHAPE_KEYS):
        # Complete already (every preset is): importing transformers would only cost seconds.
        config["model_type"] = model_type
        config["qkv_bias"] = bool(config.get("qkv_bias", model_type == "qwen2"))
        config["config_source"] = source
        return config
    try:
        from transformers import AutoConfig

        hf = AutoConfig.for_model(model_type, **config)
        full = {key: getattr(hf, key) for key in _SHAPE_KEYS if getattr(hf, key, None) is not None}
        full.update({k: v for k, v in config.items() if k in _SHAPE_KEYS})
        config = full
        source += " + transformers.AutoConfig"
    except Exception:  # no transformers, or a model type it does not know: use the fields given
        pass
    missing = [k for k in _SHAPE_KEYS[:6] if k not in config]
    if missing:
        raise SystemExit(f"torch_bench: config lacks {', '.join(missing)}")
    config["model_type"] = model_type
    config["qkv_bias"] = bool(config.get("qkv_bias", model_type == "qwen2"))
    config["config_source"] = source
    return config


def parameter_count(c: dict[str, Any]) -> int:
    """Parameters of the decoder described by ``c`` (embeddings included once when tied)."""
    h, layers, inter, vocab = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    head_dim = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * head_dim
    attn = h * h + 2 * h * kv + h * h + ((h + 2 * kv) if c["qkv_bias"] else 0)
    per_layer = attn + 3 * h * inter + 2 * h
    embed = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    return layers * per_layer + embed + h


def kv_bytes_per_token(c: dict[str, Any], dtype_bytes: int) -> int:
    """Bytes of K and V for one token across all layers."""
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    return 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * head_dim * dtype_bytes


def _rss_gib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) * 1024 / GIB, 4)
    except OSError:
        pass
    return None


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in 0..100."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def family(prefix: str, values: list[float]) -> dict[str, float]:
    """mean / p50 / p90 / p95 / p99 / min / max of ``values`` under canonical names."""
    if not values:
        return {}
    out = {f"{prefix}_mean": sum(values) / len(values), f"{prefix}_min": min(values),
           f"{prefix}_max": max(values)}
    for q in (50, 90, 95, 99):
        out[f"{prefix}_p{q}"] = percentile(values, q)
    return {k: round(v, 4) for k, v in out.items()}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the benchmark described by ``spec`` and return the report."""
    t_import = time.perf_counter()
    import torch
    import torch.nn.functional as F

    import_s = time.perf_counter() - t_import
    if not torch.cuda.is_available():
        raise SystemExit("torch_bench: no CUDA device visible to PyTorch")
    device = torch.device("cuda")
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[spec.get("dtype", "bfloat16")]
    dtype_bytes = 2
    torch.manual_seed(int(spec.get("seed", 0)))
    t_load = time.perf_counter()
    torch.cuda.init()
    torch.empty(1, device=device)  # create the context before the first reading
    phases: dict[str, dict[str, Any]] = {}

    def phase(name: str) -> None:
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        phases[name] = {"device_free_gib": round(free / GIB, 4),
                        "device_used_gib": round((total - free) / GIB, 4),
                        "device_total_gib": round(total / GIB, 4),
                        "torch_allocated_gib": round(torch.cuda.memory_allocated() / GIB, 4),
                        "torch_reserved_gib": round(torch.cuda.memory_reserved() / GIB, 4),
                        "process_rss_gib": _rss_gib(), "t_s": round(time.perf_counter() - t_load, 3)}

    phase("before_start")
    c = resolve_config(spec.get("preset"), dict(spec.get("config") or {}))
    h, n_layers = c["hidden_size"], c["num_hidden_layers"]
    n_heads, n_kv = c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = h // n_heads
    inter, vocab = c["intermediate_size"], c["vocab_size"]
    eps = float(c.get("rms_norm_eps", 1e-6))

    def weight(*shape: int) -> Any:
        return torch.empty(*shape, device=device, dtype=dtype).normal_(0.0, 0.02)

    layers = []
    for _ in range(n_layers):
        layer = {"in_norm": torch.ones(h, device=device, dtype=dtype),
                 "qkv": weight(h + 2 * n_kv * head_dim, h), "o": weight(h, h),
                 "post_norm": torch.ones(h, device=device, dtype=dtype),
                 "gate_up": weight(2 * inter, h), "down": weight(h, inter)}
        if c["qkv_bias"]:
            layer["qkv_bias"] = weight(h + 2 * n_kv * head_dim)
        layers.append(layer)
    embed = weight(vocab, h)
    lm_head = embed if c.get("tie_word_embeddings") else weight(vocab, h)
    final_norm = torch.ones(h, device=device, dtype=dtype)
    phase("after_weights")

    batch = int(spec["batch_size"])
    input_len, output_len = int(spec["input_len"]), int(spec["output_len"])
    num_requests = int(spec["num_requests"])
    fraction = float(spec.get("kv_cache_fraction", 0.9))
    max_seq = input_len + output_len
    per_token = kv_bytes_per_token(c, dtype_bytes)
    free_after_weights = torch.cuda.mem_get_info()[0]
    kv_budget = int(fraction * free_after_weights)
    slots = kv_budget // (per_token * max_seq)
    if slots < batch:
        raise SystemExit(f"torch_bench: the KV cache ({kv_budget / GIB:.2f} GiB) holds {slots} "
                         f"sequences of {max_seq} tokens, fewer than batch_size {batch}")
    pool = torch.empty((n_layers, 2, slots, n_kv, max_seq, head_dim), device=device, dtype=dtype)
    # The graph-captured decode attends over the whole static cache with a mask: positions
    # not yet written must hold numbers (0 × NaN in uninitialised memory would be NaN).
    pool.zero_()
    kv_gib = pool.numel() * dtype_bytes / GIB
    phase("after_kv")

    theta = float(c.get("rope_theta", 10000.0))
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(max_seq, device=device, dtype=torch.float32), inv_freq)
    cos_all = torch.cat([angles.cos(), angles.cos()], dim=-1).to(dtype)
    sin_all = torch.cat([angles.sin(), angles.sin()], dim=-1).to(dtype)

    def rms_norm(x: Any, w: Any) -> Any:
        return F.rms_norm(x, (h,), w, eps)

    def rope(x: Any, cos: Any, sin: Any) -> Any:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def forward(tokens: Any, pos: int, b: int) -> Any:
        t = tokens.shape[1]
        x = F.embedding(tokens, embed)
        cos, sin = cos_all[pos:pos + t], sin_all[pos:pos + t]
        for index, layer in enumerate(layers):
            y = rms_norm(x, layer["in_norm"])
            qkv = F.linear(y, layer["qkv"], layer.get("qkv_bias"))
            q, k, v = qkv.split([h, n_kv * head_dim, n_kv * head_dim], dim=-1)
            q = rope(q.view(b, t, n_heads, head_dim).transpose(1, 2), cos, sin)
            k = rope(k.view(b, t, n_kv, head_dim).transpose(1, 2), cos, sin)
            v = v.view(b, t, n_kv, head_dim).transpose(1, 2)
            cache_k, cache_v = pool[index, 0, :b], pool[index, 1, :b]
            cache_k[:, :, pos:pos + t] = k
            cache_v[:, :, pos:pos + t] = v
            attn = F.scaled_dot_product_attention(q, cache_k[:, :, :pos + t], cache_v[:, :, :pos + t],
                                                  is_causal=t > 1, enable_gqa=True)
            x = x + F.linear(attn.transpose(1, 2).reshape(b, t, h), layer["o"])
            y = rms_norm(x, layer["post_norm"])
            gate, up = F.linear(y, layer["gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer["down"])
        return F.linear(rms_norm(x[:, -1], final_norm), lm_head)

    group = n_heads // n_kv
    seq_index = torch.arange(max_seq, device=device)
    scale = 1.0 / math.sqrt(head_dim)

    def decode_step(token: Any, pos: Any, b: int) -> Any:
        """One decode step with static shapes: ``pos`` is a 1-element device tensor.

        Attends over the whole cache (``max_seq`` positions) with positions after ``pos``
        masked, writes K/V with ``index_copy_`` — no shape depends on a host integer, so the
        step can be captured as a CUDA graph.
        """
        x = F.embedding(token, embed)
        cos, sin = cos_all.index_select(0, pos), sin_all.index_select(0, pos)
        mask = torch.zeros(max_seq, device=device, dtype=torch.float32).masked_fill(
            seq_index > pos, float("-inf"))
        for index, layer in enumerate(layers):
            y = rms_norm(x, layer["in_norm"])
            qkv = F.linear(y, layer["qkv"], layer.get("qkv_bias"))
            q, k, v = qkv.split([h, n_kv * head_dim, n_kv * head_dim], dim=-1)
            q = rope(q.view(b, 1, n_heads, head_dim).transpose(1, 2), cos, sin)
            k = rope(k.view(b, 1, n_kv, head_dim).transpose(1, 2), cos, sin)
            v = v.view(b, 1, n_kv, head_dim).transpose(1, 2)
            cache_k, cache_v = pool[index, 0, :b], pool[index, 1, :b]
            cache_k.index_copy_(2, pos, k)
            cache_v.index_copy_(2, pos, v)
            # GQA without repeating K/V: the query heads of one KV head form a group.
            qg = q.reshape(b, n_kv, group, head_dim)
            scores = torch.matmul(qg, cache_k.transpose(-1, -2)).float() * scale + mask
            attn = torch.matmul(scores.softmax(dim=-1).to(dtype), cache_v)
            x = x + F.linear(attn.reshape(b, 1, h), layer["o"])
            y = rms_norm(x, layer["post_norm"])
            gate, up = F.linear(y, layer["gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer["down"])
        return F.linear(rms_norm(x[:, -1], final_norm), lm_head).argmax(dim=-1, keepdim=True)

    decode_mode = str(spec.get("decode", "cuda-graph"))
    if decode_mode not in ("cuda-graph", "eager"):
        raise SystemExit(f"torch_bench: decode must be cuda-graph or eager, not {decode_mode!r}")
    graphs: dict[int, tuple[Any, Any, Any]] = {}  # batch → (graph, static token, static pos)
    graph_pool = None

    @torch.inference_mode()
    def capture(b: int) -> tuple[Any, Any, Any]:
        """The decode step for batch ``b`` as a CUDA graph that feeds itself: it reads the
        static token and position, and writes the next token and position back into them."""
        nonlocal graph_pool
        if b in graphs:
            return graphs[b]
        token = torch.zeros((b, 1), device=device, dtype=torch.long)
        pos = torch.full((1,), input_len, device=device, dtype=torch.long)

        def step() -> None:
            token.copy_(decode_step(token, pos, b))
            pos.add_(1)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up off the capture stream, as CUDA graphs require
            for _ in range(3):
                pos.fill_(input_len)
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=graph_pool):
            step()
        graph_pool = graph.pool()
        graphs[b] = (graph, token, pos)
        return graphs[b]

    generator = torch.Generator(device=device).manual_seed(int(spec.get("seed", 0)))

    @torch.inference_mode()
    def wave(b: int, n_out: int) -> tuple[list[Any], Any]:
        prompts = torch.randint(0, vocab, (b, input_len), device=device, generator=generator)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n_out + 1)]
        if decode_mode == "eager":
            events[0].record()
            token = forward(prompts, 0, b).argmax(dim=-1, keepdim=True)
            events[1].record()
            for step in range(1, n_out):
                token = forward(token, input_len + step - 1, b).argmax(dim=-1, keepdim=True)
                events[step + 1].record()
            return events, token
        graph, static_token, static_pos = capture(b)
        events[0].record()
        static_token.copy_(forward(prompts, 0, b).argmax(dim=-1, keepdim=True))
        static_pos.fill_(input_len)
        events[1].record()
        for step in range(1, n_out):
            graph.replay()
            events[step + 1].record()
        return events, static_token

    # A warm-up wave of the full shape: every KV length the timed waves will see is seen once,
    # so per-shape kernel selection / JIT compilation lands in load_s, not in the timings.
    t_warmup = time.perf_counter()
    for _ in range(int(spec.get("warmup_waves", 1))):
        wave(batch, output_len)
    if decode_mode == "cuda-graph" and num_requests % batch:
        capture(num_requests % batch)  # the last, smaller wave's graph too: capture is not timed
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    load_s = time.perf_counter() - t_load
    warmup_s = time.perf_counter() - t_warmup

    window_unix_start = time.time()  # the GPU is idle (synchronized): the window starts now
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    waves: list[tuple[int, list[Any]]] = []
    remaining = num_requests
    while remaining > 0:
        b = min(batch, remaining)
        events, _ = wave(b, output_len)
        waves.append((b, events))
        remaining -= b
    end = torch.cuda.Event(enable_timing=True)
    end.record()
    torch.cuda.synchronize()
    window_unix_end = time.time()
    phase("after_run")

    ttft, latency, tpot, itl, wave_rows = [], [], [], [], []
    for b, events in waves:
        first_ms = start.elapsed_time(events[1])
        done_ms = start.elapsed_time(events[-1])
        steps = [events[i].elapsed_time(events[i + 1]) for i in range(1, len(events) - 1)]
        itl.extend(steps)
        per_token_ms = (done_ms - first_ms) / max(output_len - 1, 1)
        ttft.extend([first_ms] * b)
        latency.extend([done_ms] * b)
        tpot.extend([per_token_ms] * b)
        wave_rows.append({"requests": b, "prefill_ms": round(events[0].elapsed_time(events[1]), 4),
                          "decode_ms": round(events[1].elapsed_time(events[-1]), 4)})
    total_ms = start.elapsed_time(end)
    total_s = total_ms / 1000.0
    peak_reserved = torch.cuda.max_memory_reserved() / GIB
    peak_allocated = torch.cuda.max_memory_allocated() / GIB
    total_gib = phases["after_run"]["device_total_gib"]
    metrics: dict[str, float] = {
        "num_requests": num_requests,
        "total_input_tokens": num_requests * input_len,
        "total_output_tokens": num_requests * output_len,
        "avg_input_len": input_len,
        "avg_output_len": output_len,
        "max_batch_size": batch,
        "total_latency_ms": round(total_ms, 4),
        "duration_s": round(total_s, 6),
        "measured_window_s": round(total_s, 6),
        "request_throughput_req_s": round(num_requests / total_s, 6),
        "output_throughput_tok_s": round(num_requests * output_len / total_s, 4),
        "total_token_throughput_tok_s": round(num_requests * (input_len + output_len) / total_s, 4),
        "per_user_output_throughput_tok_s": round(output_len / (sum(latency) / len(latency) / 1000.0), 4),
        "kv_cache_gib": round(kv_gib, 4),
        "kv_cache_fraction": fraction,
        "kv_cache_max_tokens": slots * max_seq,
        "memory_total_gib": total_gib,
        "memory_available_gib": round(free_after_weights / GIB, 4),
        "peak_memory_gib": round(peak_reserved, 4),
        "tp_size": 1,
        "pp_size": 1,
    }
    metrics.update(family("ttft_ms", ttft))
    metrics.update(family("tpot_ms", tpot))
    metrics.update(family("latency_ms", latency))
    metrics.update(family("itl_ms", itl))
    phases["peak"] = {"torch_reserved_gib": round(peak_reserved, 4),
                      "torch_allocated_gib": round(peak_allocated, 4),
                      "device_used_gib": phases["after_run"]["device_used_gib"],
                      "process_rss_gib": _rss_gib()}
    props = torch.cuda.get_device_properties(0)
    try:  # the installed version, without importing the package (seconds)
        from importlib.metadata import version

        transformers_version: str | None = version("transformers")
    except Exception:
        transformers_version = None
    params = parameter_count(c)
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "random_weights": True,
        "model": {"preset": spec.get("preset"), "config": c, "parameters": params,
                  "weights_gib": round(params * dtype_bytes / GIB, 4), "dtype": spec.get("dtype", "bfloat16"),
                  "implementation": "sparkreport reference decoder (RMSNorm, RoPE, GQA SDPA, SwiGLU)"},
        "workload": {"batch_size": batch, "num_requests": num_requests, "input_len": input_len,
                     "output_len": output_len, "kv_cache_fraction": fraction, "max_seq_len": max_seq,
                     "kv_bytes_per_token": per_token, "kv_slots": slots, "waves": len(waves),
                     "warmup_waves": int(spec.get("warmup_waves", 1)), "seed": int(spec.get("seed", 0)),
                     "decode": decode_mode, "cuda_graphs": len(graphs),
                     "issue": "all requests at t=0, static batches"},
        "metrics": metrics,
        "memory": phases,
        "timing": {"import_torch_s": round(import_s, 3), "load_s": round(load_s, 3),
                   "warmup_s": round(warmup_s, 3), "window_s": round(total_s, 3),
                   "window_unix_s": [round(window_unix_start, 3), round(window_unix_end, 3)], "waves": wave_rows},
        "software": {"python": platform.python_version(), "torch": torch.__version__,
                     "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                     "transformers": transformers_version,
                     "sdpa_backends_enabled": {
                         "flash": torch.backends.cuda.flash_sdp_enabled(),
                         "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                         "cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
                         "math": torch.backends.cuda.math_sdp_enabled()}},
        "device": {"name": props.name, "compute_capability": f"{props.major}.{props.minor}",
                   "multiprocessors": props.multi_processor_count,
                   "total_memory_gib": round(props.total_memory / GIB, 4)},
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: read the spec, run, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spec", required=True, type=Path, help="JSON spec written by sparkreport")
    parser.add_argument("--out", required=True, type=Path, help="where to write the JSON report")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec.read_text())
    print(f"torch_bench: pid {os.getpid()}, python {sys.version.split()[0]}", flush=True)
    report = run(spec)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2))
    tmp.replace(args.out)
    m = report["metrics"]
    print(f"torch_bench: {m['output_throughput_tok_s']:.1f} tok/s, TTFT p50 {m['ttft_ms_p50']:.1f} ms, "
          f"TPOT p50 {m['tpot_ms_p50']:.2f} ms, KV cache {m['kv_cache_gib']:.2f} GiB, "
          f"peak {m['peak_memory_gib']:.2f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
