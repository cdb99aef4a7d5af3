"""Execution environments: one small class each, behind one interface, in a registry.

An environment turns a :class:`Launch` (argv, declared variables, the paths the workload
needs) into a running :class:`Execution` that can be waited on, killed as a whole (process
group, cgroup or container) and asked for what it recorded. Built-ins register the same way
an extension would: subclass :class:`ExecEnvironment` and decorate it with :func:`register`.

- ``native``: the process runs directly, in its own process group.
- ``chroot``: inside a root filesystem folder, in a private mount namespace with /dev, /proc,
  /sys and the needed folders bind-mounted, under ``env -i`` + declared variables.
- ``cgroup``: natively, inside a fresh cgroup (v2, or v1) with an optional memory limit: the
  kernel accounting Docker uses without an image or an overlay filesystem.
- ``docker``: a container through the Docker SDK, with the seed study's flags configurable.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from sparkreport.execute import cgroups
from sparkreport.execute.guard import ProgressMark, set_oom_score_adj, tree_cpu_s
from sparkreport.registry import registrar

if TYPE_CHECKING:
    from sparkreport.execute.campaign import EnvironmentSpec, Fields
    from sparkreport.store import RawFile

_PR_SET_PDEATHSIG = 1


@dataclass
class Launch:
    """What a workload step asks an environment to run."""

    argv: list[str]
    env: dict[str, str]
    workdir: Path
    log_path: Path
    binds: list[Path] = field(default_factory=list)
    gpu: bool = False
    name: str = "run"
    #: Set in the step's processes (the guard's OOM order); None leaves the inherited value.
    oom_score_adj: int | None = None


@dataclass
class Outcome:
    """What an environment recorded about one finished execution."""

    exit_code: int | None
    timed_out: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    raw: list[RawFile] = field(default_factory=list)
    image_digest: str | None = None


class Execution:
    """A running workload step: wait, kill as a whole, then :meth:`finish`."""

    pid: int | None = None

    def wait(self, timeout: float | None) -> int | None:
        """The exit code, or None when ``timeout`` seconds passed first."""
        raise NotImplementedError

    def kill(self) -> None:
        """Stop everything the step started (idempotent)."""
        raise NotImplementedError

    def kill_now(self) -> None:
        """SIGKILL everything the step started, without waiting (the guard; safe from another thread)."""
        self.kill()

    def progress(self) -> ProgressMark:
        """Output bytes and CPU seconds so far (the guard's stall signals; None where unknown)."""
        return ProgressMark()

    def cgroup_dir(self) -> Path | None:
        """The memory cgroup the step's processes are counted in, when there is one."""
        return None

    def finish(self, exit_code: int | None, timed_out: bool) -> Outcome:
        """Collect what the environment recorded and clean up (called once, after exit)."""
        return Outcome(exit_code=exit_code, timed_out=timed_out)


def _set_pdeathsig() -> None:
    """In the child: die with the runner, so a killed campaign leaves no orphan running."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ProcessExecution(Execution):
    """A local process in its own session (so its whole group can be killed)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path,
                 join_cgroup: Path | None = None, oom_score_adj: int | None = None):
        self._log = log_path.open("ab")
        join = join_cgroup

        def preexec() -> None:
            _set_pdeathsig()
            if oom_score_adj is not None:
                set_oom_score_adj(oom_score_adj)  # inherited by everything the step starts
            if join is not None:
                cgroups.join(join)

        try:
            self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=self._log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=preexec)
        except BaseException:
            self._log.close()
            raise
        self.pid = self.proc.pid

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=5.0)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers of the group
                return
            except subprocess.TimeoutExpired:
                continue

    def kill_now(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def progress(self) -> ProgressMark:
        try:
            size: int | None = os.fstat(self._log.fileno()).st_size
        except (OSError, ValueError):
            size = None
        return ProgressMark(output_bytes=size, cpu_s=tree_cpu_s(self.proc.pid))

    def finish(self, exit_code: int | None, timed_out: bool) -> Outcome:
        self._log.close()
        return Outcome(exit_code=exit_code, timed_out=timed_out)


class ExecEnvironment:
    """Base of an execution environment kind."""

    #: The campaign's ``kind:`` value.
    kind: ClassVar[str]
    #: ``environment.kind`` in run.json (one of schema.ENVIRONMENT_KINDS).
    record_kind: ClassVar[str]
    #: One line for `--help` and docs.
    description: ClassVar[str]
    #: The options this kind accepts besides ``kind`` and ``name``.
    option_keys: ClassVar[tuple[str, ...]] = ("env", "binds")

    def __init__(self, spec: EnvironmentSpec):
        self.spec = spec
        self.name = spec.name
        self.options = spec.options

    @classmethod
    def validate(cls, spec: EnvironmentSpec, fields: Fields) -> None:
        """Check this kind's options (raising CampaignError with the line)."""
        fields.str_mapping("env")
        for index, item in enumerate(fields.sequence("binds")):
            if not isinstance(item, str) or not item.startswith("/"):
                raise fields.doc.fail(fields.where + ("binds", index),
                                      f"must be an absolute path, not {item!r}")

    def availability(self) -> str | None:
        """None when this environment can run here, else what is missing (one phrase)."""
        return None

    def python(self) -> str:
        """The Python interpreter workloads run with inside this environment."""
        return str(self.options.get("python") or sys.executable)

    def declared_env(self) -> dict[str, str]:
        """The variables the campaign declares for this environment (``${VAR}`` is taken from
        the runner's own environment, e.g. ``LD_LIBRARY_PATH: ${LD_LIBRARY_PATH}``)."""
        return {str(k): os.path.expandvars(str(v)) for k, v in (self.options.get("env") or {}).items()}

    def process_env(self, launch: Launch) -> dict[str, str]:
        """The full environment the workload process sees (native: inherited + declared)."""
        return {**os.environ, **launch.env, **self.declared_env()}

    def command_line(self, launch: Launch) -> list[str]:
        """The argv actually executed (recorded in run.json)."""
        return list(launch.argv)

    def start(self, launch: Launch, run_id: str) -> Execution:
        """Start one workload step."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The environment's settings for ``environment.details``."""
        return {k: v for k, v in self.options.items() if k != "env"}


ENVIRONMENTS: dict[str, type[ExecEnvironment]] = {}


register = registrar(ENVIRONMENTS, "kind", "environment kind")


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@register
class NativeEnvironment(ExecEnvironment):
    """Run directly on the host, in a fresh process group."""

    kind = "native"
    record_kind = "native"
    description = "run directly on the host (own process group)"
    option_keys = ("env", "binds", "python", "clean_env")

    def process_env(self, launch: Launch) -> dict[str, str]:
        if self.options.get("clean_env"):
            return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **launch.env, **self.declared_env()}
        return super().process_env(launch)

    def start(self, launch: Launch, run_id: str) -> Execution:
        return ProcessExecution(launch.argv, self.process_env(launch), launch.workdir, launch.log_path,
                                oom_score_adj=launch.oom_score_adj)


@register
class CgroupEnvironment(ExecEnvironment):
    """Run natively inside a fresh cgroup, with an optional memory limit."""

    kind = "cgroup"
    record_kind = "cgroup"
    description = "run natively inside a fresh cgroup (v2 or v1), optional memory limit"
    option_keys = ("env", "binds", "python", "memory_limit")

    @classmethod
    def validate(cls, spec: EnvironmentSpec, fields: Fields) -> None:
        super().validate(spec, fields)
        from sparkreport.execute.campaign import parse_size

        limit = fields.get("memory_limit")
        if limit is not None and parse_size(limit) is None:
            raise fields.fail("memory_limit", f"{limit!r} is not a size",
                              fix="write e.g. 64GiB, 512MiB or a number of bytes")

    def memory_limit(self) -> int | None:
        """The limit in bytes, or None for none."""
        from sparkreport.execute.campaign import parse_size

        value = self.options.get("memory_limit")
        return None if value is None else parse_size(value)

    def availability(self) -> str | None:
        if not _is_root():
            return "not root (creating a cgroup needs root)"
        base = cgroups.memory_root()
        if base is None:
            return "no cgroup memory controller under /sys/fs/cgroup"
        if not os.access(base, os.W_OK):
            return f"{base} is not writable"
        return None

    def start(self, launch: Launch, run_id: str) -> Execution:
        folder = cgroups.create(f"{run_id}-{uuid.uuid4().hex[:6]}", self.memory_limit())
        try:
            inner = ProcessExecution(launch.argv, self.process_env(launch), launch.workdir,
                                     launch.log_path, join_cgroup=folder, oom_score_adj=launch.oom_score_adj)
        except BaseException:
            cgroups.remove(folder)
            raise
        return CgroupExecution(inner, folder)

    def describe(self) -> dict[str, Any]:
        limit = self.memory_limit()
        return {"memory_limit_gib": None if limit is None else round(limit / 2**30, 4),
                "cgroup_version": cgroups.version()}


class CgroupExecution(Execution):
    """A process inside its own cgroup; reads the cgroup's memory before removing it."""

    def __init__(self, inner: ProcessExecution, folder: Path):
        self.inner = inner
        self.folder = folder
        self.pid = inner.pid

    def wait(self, timeout: float | None) -> int | None:
        return self.inner.wait(timeout)

    def kill(self) -> None:
        cgroups.kill_all(self.folder)
        self.inner.kill()

    def kill_now(self) -> None:
        cgroups.kill_all(self.folder)
        self.inner.kill_now()

    def progress(self) -> ProgressMark:
        return self.inner.progress()

    def cgroup_dir(self) -> Path | None:
        return self.folder

    def finish(self, exit_code: int | None, timed_out: bool) -> Outcome:
        outcome = self.inner.finish(exit_code, timed_out)
        stats = cgroups.read_memory(self.folder)
        outcome.details["cgroup"] = {"path": str(self.folder), "version": cgroups.version(),
                                     **stats.to_gib()}
        cgroups.kill_all(self.folder)
        cgroups.remove(self.folder)
        return outcome


@register
class ChrootEnvironment(ExecEnvironment):
    """Run inside a root filesystem folder with a clean, explicit environment."""

    kind = "chroot"
    record_kind = "chroot"
    description = "chroot into a root filesystem folder (env -i + declared variables)"
    option_keys = ("env", "binds", "python", "rootfs")
    SYSTEM_BINDS = ("/dev", "/proc", "/sys")

    @classmethod
    def validate(cls, spec: EnvironmentSpec, fields: Fields) -> None:
        super().validate(spec, fields)
        rootfs = fields.text("rootfs", required=True) or ""
        if not rootfs.startswith("/"):
            raise fields.fail("rootfs", f"must be an absolute path, not {rootfs!r}")

    def python(self) -> str:
        return str(self.options.get("python") or "python3")

    def availability(self) -> str | None:
        rootfs = Path(str(self.options["rootfs"]))
        if not _is_root():
            return "not root (chroot and bind mounts need root)"
        if not (rootfs / "usr" / "bin" / "env").exists():
            return f"no root filesystem at {rootfs} (no usr/bin/env)"
        missing = [tool for tool in ("unshare", "mount", "chroot") if shutil.which(tool) is None]
        if missing:
            return f"missing {', '.join(missing)} (util-linux / coreutils)"
        return None

    def process_env(self, launch: Launch) -> dict[str, str]:
        return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                **launch.env, **self.declared_env()}

    def command_line(self, launch: Launch) -> list[str]:
        env = [f"{k}={v}" for k, v in self.process_env(launch).items()]
        return ["chroot", str(self.options["rootfs"]), "/usr/bin/env", "-i", *env, *launch.argv]

    def mount_script(self, launch: Launch) -> str:
        """The shell script run in a private mount namespace: bind, then exec chroot."""
        rootfs = str(self.options["rootfs"]).rstrip("/")
        lines = ["set -e"]
        extra = [str(p) for p in launch.binds] + [str(p) for p in self.options.get("binds") or []]
        for source in list(self.SYSTEM_BINDS) + sorted(set(extra)):
            target = shlex.quote(rootfs + source)
            if os.path.isdir(source):
                lines.append(f"mkdir -p {target}")
            else:
                lines.append(f"mkdir -p $(dirname {target}); touch {target}")
            lines.append(f"mount --rbind {shlex.quote(source)} {target}")
        lines.append("exec " + shlex.join(self.command_line(launch)))
        return "\n".join(lines)

    def start(self, launch: Launch, run_id: str) -> Execution:
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                self.mount_script(launch)]
        return ProcessExecution(argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                launch.workdir, launch.log_path, oom_score_adj=launch.oom_score_adj)

    def describe(self) -> dict[str, Any]:
        return {"rootfs": self.options["rootfs"], "binds": list(self.SYSTEM_BINDS)
                + list(self.options.get("binds") or []), "mount_namespace": "private (unshare -m)"}


_DOCKER_DEFAULTS: dict[str, Any] = {
    "gpus": "all", "ipc": "host", "shm_size": "60g", "network": "host",
    "ulimits": {"memlock": -1, "stack": 67108864},
}


@register
class DockerEnvironment(ExecEnvironment):
    """Run in a container through the Docker SDK (the seed study's flags, each configurable)."""

    kind = "docker"
    record_kind = "container"
    description = "a Docker container via the SDK (GPUs, ipc=host, shm size, ulimits)"
    option_keys = ("env", "binds", "python", "image", "gpus", "ipc", "shm_size", "ulimits",
                   "memory_limit", "network", "runtime", "user")

    @classmethod
    def validate(cls, spec: EnvironmentSpec, fields: Fields) -> None:
        super().validate(spec, fields)
        fields.text("image", required=True)
        gpus = fields.get("gpus", "all")
        if not (gpus in ("all", "none", None) or (isinstance(gpus, int) and not isinstance(gpus, bool))
                or (isinstance(gpus, list) and all(isinstance(g, int | str) for g in gpus))):
            raise fields.fail("gpus", f"must be all, none, a count or a list of device ids, not {gpus!r}")
        for key, value in fields.mapping("ulimits").items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise fields.doc.fail(fields.where + ("ulimits", key), f"must be a whole number, not {value!r}",
                                      fix="use -1 for unlimited")

    def option(self, key: str) -> Any:
        """An option, or the seed study's default for it."""
        return self.options.get(key, _DOCKER_DEFAULTS.get(key))

    def python(self) -> str:
        return str(self.options.get("python") or "python3")

    def process_env(self, launch: Launch) -> dict[str, str]:
        return {**launch.env, **self.declared_env()}

    def client(self) -> Any:
        """A Docker SDK client (imported lazily: the package is optional)."""
        import docker

        return docker.from_env(timeout=30)

    def availability(self) -> str | None:
        try:
            import docker  # noqa: F401
        except ImportError:
            return "the Python package 'docker' is not installed (pip install docker)"
        try:
            client = self.client()
            client.ping()
        except Exception as exc:  # the SDK raises many types; any means "no daemon"
            return f"no Docker daemon reachable ({type(exc).__name__}); start dockerd"
        try:
            client.images.get(str(self.options["image"]))
        except Exception:
            return f"image {self.options['image']!r} not found locally; build or pull it first"
        return None

    def run_kwargs(self, launch: Launch, run_id: str) -> dict[str, Any]:
        """The keyword arguments of ``containers.run`` (also recorded)."""
        from sparkreport.execute.campaign import parse_size

        kwargs: dict[str, Any] = {
            "image": str(self.options["image"]),
            "command": list(launch.argv),
            "detach": True,
            "environment": self.process_env(launch),
            "working_dir": str(launch.workdir),
            "name": f"sparkreport-{run_id}-{uuid.uuid4().hex[:6]}".replace(".", "-"),
            "labels": {"org.sparkreport.run_id": run_id},
            "volumes": {str(p): {"bind": str(p), "mode": "rw"}
                        for p in sorted({*map(str, launch.binds), *(self.options.get("binds") or [])})},
            "network_mode": str(self.option("network")),
        }
        if self.option("ipc"):
            kwargs["ipc_mode"] = str(self.option("ipc"))
        if self.option("shm_size"):
            kwargs["shm_size"] = str(self.option("shm_size"))
        if self.options.get("memory_limit") is not None:
            kwargs["mem_limit"] = parse_size(self.options["memory_limit"])
        if launch.oom_score_adj is not None:
            kwargs["oom_score_adj"] = launch.oom_score_adj
        if self.options.get("runtime"):
            kwargs["runtime"] = str(self.options["runtime"])
        if self.options.get("user"):
            kwargs["user"] = str(self.options["user"])
        return kwargs

    def start(self, launch: Launch, run_id: str) -> Execution:
        import docker.types

        kwargs = self.run_kwargs(launch, run_id)
        gpus = self.option("gpus")
        if launch.gpu and gpus not in (None, "none"):
            if gpus == "all":
                request = docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
            elif isinstance(gpus, int):
                request = docker.types.DeviceRequest(count=gpus, capabilities=[["gpu"]])
            else:
                request = docker.types.DeviceRequest(device_ids=[str(g) for g in gpus],
                                                     capabilities=[["gpu"]])
            kwargs["device_requests"] = [request]
        kwargs["ulimits"] = [docker.types.Ulimit(name=name, soft=value, hard=value)
                             for name, value in (self.option("ulimits") or {}).items()]
        client = self.client()
        kwargs.pop("detach")
        container = client.containers.create(**kwargs)
        try:
            container.start()
        except BaseException:
            with contextlib.suppress(Exception):
                container.remove(force=True)  # a container that never started leaves nothing
            raise
        return DockerExecution(client, container, launch.log_path)

    def describe(self) -> dict[str, Any]:
        return {key: self.option(key) for key in ("image", "gpus", "ipc", "shm_size", "ulimits",
                                                 "network", "memory_limit", "runtime", "user")
                if self.option(key) is not None}


class DockerExecution(Execution):
    """A running container: its log, ``docker inspect``, image digest and cgroup memory."""

    def __init__(self, client: Any, container: Any, log_path: Path):
        self.client = client
        self.container = container
        self.log_path = log_path
        self._cgroup: Path | None = None
        self._log_file: Path | None = None  # the daemon's json-file log: grows as the container prints
        with contextlib.suppress(Exception):
            container.reload()
            self._log_file = Path(container.attrs["LogPath"]) if container.attrs.get("LogPath") else None
            self.pid = int(container.attrs["State"]["Pid"]) or None
            if self.pid:
                self._cgroup = cgroups.dir_of_pid(self.pid)

    def wait(self, timeout: float | None) -> int | None:
        try:
            result = self.container.wait(timeout=timeout)
        except Exception:  # requests' ReadTimeout / ConnectionError: still running
            return None
        return int(result.get("StatusCode", -1))

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill()

    def progress(self) -> ProgressMark:
        size = None
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                size = self._log_file.stat().st_size
        return ProgressMark(output_bytes=size, cpu_s=tree_cpu_s(self.pid) if self.pid else None)

    def cgroup_dir(self) -> Path | None:
        return self._cgroup

    def finish(self, exit_code: int | None, timed_out: bool) -> Outcome:
        import json

        from sparkreport.store import RawFile

        outcome = Outcome(exit_code=exit_code, timed_out=timed_out)
        with contextlib.suppress(Exception):
            self.log_path.write_bytes(self.container.logs(stdout=True, stderr=True))
        with contextlib.suppress(Exception):
            self.container.reload()
        inspect = dict(self.container.attrs)
        image_id = inspect.get("Image")
        digest = None
        with contextlib.suppress(Exception):
            image = self.client.images.get(image_id)
            digests = image.attrs.get("RepoDigests") or []
            digest = digests[0].split("@", 1)[1] if digests else image.id
        outcome.image_digest = digest or image_id
        outcome.details["container"] = {
            "id": inspect.get("Id"), "name": inspect.get("Name", "").lstrip("/"),
            "image_id": image_id, "cgroup_path": str(self._cgroup) if self._cgroup else None,
            "oom_killed": inspect.get("State", {}).get("OOMKilled"),
        }
        outcome.raw.append(RawFile(name="docker-inspect.json",
                                   content=json.dumps(inspect, indent=2, sort_keys=True).encode()))
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
        return outcome
