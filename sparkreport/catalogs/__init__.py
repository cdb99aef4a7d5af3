"""Hardware and model facts (data files in this package, each figure with its source).

Runs are matched to hardware by GPU name and to models by id (or alias); an inline
``model.details`` in a run overrides or replaces the catalog entry. Unknown hardware or models
make the checks that need them skip, visibly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: Bytes per parameter by dtype. MXFP4/NVFP4: 4-bit values plus one 8-bit scale per 32 (MX) or
#: 16 (NV) values.
BYTES_PER_PARAM = {
    "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
    "mxfp4": 0.5 + 1 / 32, "nvfp4": 0.5 + 1 / 16, "int4": 0.5,
}
GIB = 2**30


@dataclass(frozen=True)
class HardwareSpec:
    id: str
    name: str
    match: tuple[str, ...]
    memory_gb: float
    bandwidth_gb_s: float
    unified_memory: bool
    memory_gib_visible: tuple[float, float] | None = None
    memory_note: str | None = None
    sms: int | None = None
    compute_capability: str | None = None
    bf16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelSpec:
    id: str
    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str = "bf16"
    aliases: tuple[str, ...] = ()
    active_params_b: float | None = None
    hidden_size: int | None = None
    weight_gb: float | None = None
    active_weight_gb: float | None = None
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights (checkpoint size when given, else params × bytes/param)."""
        if self.weight_gb is not None:
            return self.weight_gb * 1e9
        return self.params_b * 1e9 * BYTES_PER_PARAM.get(self.dtype, 2.0)

    @property
    def weight_gib(self) -> float:
        return self.weight_bytes / GIB

    @property
    def active_weight_bytes(self) -> float:
        """Bytes read per token at least once per decode step (active parameters for MoE)."""
        if self.active_weight_gb is not None:
            return self.active_weight_gb * 1e9
        if self.active_params_b is None:
            return self.weight_bytes
        return self.weight_bytes * self.active_params_b / self.params_b

    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> float:
        """K and V for every layer: 2 × layers × kv_heads × head_dim × bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_dtype_bytes


def _load(name: str) -> list[dict[str, Any]]:
    text = resources.files("sparkreport.catalogs").joinpath(name).read_text(encoding="utf-8")
    # libyaml's parser where PyYAML has it: a tenth of the pure-Python parser's 12 ms per file,
    # which every build pays (the same constructor makes the same values)
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    assert isinstance(data, list)
    return data


def _tupled(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}


@cache
def hardware_catalog() -> tuple[HardwareSpec, ...]:
    return tuple(HardwareSpec(**_tupled(e)) for e in _load("hardware.yaml"))


@cache
def model_catalog() -> tuple[ModelSpec, ...]:
    return tuple(ModelSpec(**_tupled(e)) for e in _load("models.yaml"))


def match_hardware(gpu_name: str | None) -> HardwareSpec | None:
    """The catalog entry whose match strings occur in ``gpu_name`` (case-insensitive)."""
    if not gpu_name:
        return None
    lowered = gpu_name.lower()
    for spec in hardware_catalog():
        if any(m.lower() in lowered for m in spec.match):
            return spec
    return None


def match_model(model_id: str | None, name: str | None = None,
                details: dict[str, Any] | None = None) -> ModelSpec | None:
    """Catalog entry by id or alias; ``details`` (an inline description) fills or overrides it."""
    spec = None
    for key in (model_id, name):
        if not key:
            continue
        lowered = key.lower()
        for entry in model_catalog():
            if lowered == entry.id.lower() or lowered in (a.lower() for a in entry.aliases):
                spec = entry
                break
        if spec:
            break
    if details:
        known = {f.name for f in fields(ModelSpec)}
        base = {f.name: getattr(spec, f.name) for f in fields(ModelSpec)} if spec else {"id": model_id or name}
        base.update({k: v for k, v in details.items() if k in known})
        try:
            return ModelSpec(**base)
        except TypeError:
            return spec
    return spec


#: Spellings of a precision → the catalog's dtype names.
DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
               "float8_e4m3fn": "fp8", "float8": "fp8", "e4m3": "fp8"}


def normalise_dtype(dtype: str | None) -> str | None:
    """``torch.bfloat16`` / ``bfloat16`` / ``BF16`` → ``bf16`` (None stays None)."""
    if not dtype:
        return None
    name = str(dtype).lower().removeprefix("torch.")
    return DTYPE_NAMES.get(name, name)


def facts_from_config(parameters: float | None, config: dict[str, Any], dtype: str | None,
                      weights_gib: float | None = None, source: str = "") -> dict[str, Any]:
    """A record's model facts (``model.details``: the fields of :class:`ModelSpec`) from a
    Hugging Face-style config, the parameter count and the dtype the model was loaded in.

    ``weights_gib`` (the weights as loaded) becomes ``weight_gb`` so capacity and roofline use
    the measured size rather than parameters × bytes per parameter.
    """
    facts: dict[str, Any] = {}
    if parameters:
        facts["params_b"] = round(float(parameters) / 1e9, 6)
    layers = config.get("num_hidden_layers")
    heads = config.get("num_attention_heads")
    hidden = config.get("hidden_size")
    if layers:
        facts["layers"] = int(layers)
    kv_heads = config.get("num_key_value_heads") or heads
    if kv_heads:
        facts["kv_heads"] = int(kv_heads)
    head_dim = config.get("head_dim") or (hidden // heads if hidden and heads else None)
    if head_dim:
        facts["head_dim"] = int(head_dim)
    if hidden:
        facts["hidden_size"] = int(hidden)
    name = normalise_dtype(dtype)
    if name:
        facts["dtype"] = name
    if weights_gib:
        facts["weight_gb"] = round(float(weights_gib) * GIB / 1e9, 4)
    if source:
        facts["source"] = source
    return facts
