"""The devices: the GPU path without a GPU (device discovery faked, tests/support/fake_gpu.py) and the CPU's allocator,
each case in a fresh process.

On a machine with a GPU the same code runs for real: `make gpu-check` and `make bench` measure it there.
"""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from child_env import child_env
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
FAKE_SMI = '#!/bin/sh\necho "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1234)"\n'


def run_with_fake_gpu(code: str) -> str:
    """Run ``code`` after fake_gpu.install() in a fresh interpreter; its stdout."""
    prelude = "import fake_gpu\nfake_gpu.install()\n"
    env = child_env(ROOT, ROOT / "tests" / "support", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_auto_picks_the_gpu_and_names_it_cpu_forces_the_cpu_and_models_are_cached_per_device():
    out = run_with_fake_gpu(
        "from dataclasses import replace\n"
        "from transformer import LiveConfig, ModelCache, device_label, resolve_device, run_live\n"
        "from transformer.runtime.device import memory_in_use\n"
        "from transformer.training.pretrained import load_pretrained\n"
        "cache = ModelCache()\n"
        "config = LiveConfig(d_model=16, num_heads=2, d_ff=32)\n"
        "gpu, cpu = run_live(config, cache), run_live(replace(config, device='cpu'), cache)\n"
        "print(resolve_device('auto'), resolve_device('cpu'), device_label('/GPU:0'), sep='|')\n"
        "print(gpu.device, gpu.device_label, cpu.device, cpu.device_label, cache.builds, sep='|')\n"
        "print(load_pretrained('reverse', '/GPU:0') is load_pretrained('reverse', '/CPU:0'), memory_in_use('/GPU:0'))\n"
    ).splitlines()
    assert out[0] == "/GPU:0|/CPU:0|GPU:0 — NVIDIA Fake A100"
    assert out[1] == "/GPU:0|GPU:0 — NVIDIA Fake A100|/CPU:0|CPU|2"  # one model per device
    assert out[2].startswith("False (314572800, ")  # loaded once per device; TensorFlow's memory in use


ENTRY_POINTS = (
    "from dataclasses import replace\n"
    "from transformer import LiveConfig, ModelCache, attention_walkthrough, keras_difference, run_live\n"
    "from transformer.live.inputs import encoding_array\n"
    "from transformer.live.decode import decode\nfrom transformer.training.answers import translate\n"
    "from transformer.training.pretrained import load_pretrained\n"
    "from transformer.training.saved_model import TrainSpec\nfrom transformer.training.train import train\n"
    "from transformer.training import worker\n"
    "fake_gpu.record_scopes()\n"
    "choice = {choice!r}\n"
    "device = '/CPU:0' if choice == 'cpu' else '/GPU:0'\n"
    "config = LiveConfig(d_model=16, num_heads=2, d_ff=32, seq_len=5, device=choice)\n"
    "cache = ModelCache()\n"
    "run_live(config, cache)\n"
    "attention_walkthrough(config, 'cross', 1, cache)\n"
    "keras_difference(config, 'decoder', 0, cache)\n"
    "run_live(replace(config, weights='reverse', source_text='a b c'), cache)\n"
    "translate(load_pretrained('sort', device), 'c a b')\n"
    "decode(replace(config, weights='reverse'), 'a b c')\n"
    "decode(replace(config, architecture='decoder-only', norm='pre'), '1 2 3')\n"
    "encoding_array(9, 24, device)\n"
    "spec = TrainSpec(task='copy', d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=2, batch=4, max_len=4)\n"
    "train(spec, device=device)\n"
    "trained = worker.run_job(spec, choice, lambda kind, payload: None, lambda: False)\n"
    "worker.rebuild_trained(spec, trained, device)\n"
    "print(sorted({{scope for _, scope in fake_gpu.OPS}}, key=str), len(fake_gpu.OPS))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("choice, device", [("cpu", "/CPU:0"), ("auto", "/GPU:0")])
def test_every_computation_a_session_starts_runs_under_its_device(choice, device):
    """Random and trained models, the walkthrough and its Keras check, greedy decoding, the encodings and
    training: every recorded op ran inside ``tf.device(<the session's device>)``, none outside a scope."""
    scopes, count = run_with_fake_gpu(ENTRY_POINTS.format(choice=choice)).strip().rsplit(" ", 1)
    assert scopes == repr([device]) and int(count) > 100


FIRST_REQUESTS = {
    "a live run": "from transformer import LiveConfig, run_live\nrun_live(LiveConfig(d_model=8, num_heads=2))",
    "a trained model": ("from transformer.training.answers import translate\n"
                        "from transformer.training.pretrained import load_pretrained\n"
                        "translate(load_pretrained('copy'), 'a b')"),
    "training": "from transformer.training.saved_model import TrainSpec\nfrom transformer.training.train import train\n"
                "train(TrainSpec(d_model=8, num_heads=2, d_ff=8, num_layers=1, steps=1, batch=2, max_len=3))",
    "an encoding": "from transformer import positional_encoding\npositional_encoding(4, 8)",
    "a mask": "from transformer.core.masks import subsequent_mask\nsubsequent_mask(3)",
    "a training job": "from transformer.training.saved_model import TrainSpec\n"
                      "from transformer.training import worker\n"
                      "worker.run_job(TrainSpec(d_model=8, num_heads=2, d_ff=8, num_layers=1, steps=1, batch=2, "
                      "max_len=3), 'auto', lambda kind, payload: None, lambda: False)",
}


@pytest.mark.slow
@pytest.mark.parametrize("request_", FIRST_REQUESTS, ids=list(FIRST_REQUESTS))
def test_memory_growth_is_on_before_the_runtime_starts_whatever_the_first_request(request_):
    out = run_with_fake_gpu(FIRST_REQUESTS[request_] + "\nprint(fake_gpu.EVENTS)")
    assert out.strip() == "[('growth', False, True), ('tf32', False, False)]"


def _make(*arguments: str, fake_smi: bool, tmp_path: Path) -> str:
    path = os.environ["PATH"]
    if fake_smi:
        (tmp_path / "nvidia-smi").write_text(FAKE_SMI)
        (tmp_path / "nvidia-smi").chmod(0o755)
        path = f"{tmp_path}{os.pathsep}{path}"
    env = {key: value for key, value in os.environ.items()  # CI exports GPU=0; `make test GPU=0` passes it on
           if key not in ("GPU", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL")}
    out = subprocess.run(["make", "-n", "-B", "run", *arguments], cwd=ROOT, env=dict(env, PATH=path),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("fake_smi, arguments, chosen, why", [
    (True, (), "requirements-gpu.txt", "nvidia-smi -L lists GPU 0: NVIDIA A100-SXM4-40GB"),
    (False, (), "requirements.txt", "nvidia-smi -L lists no GPU"),
    (True, ("GPU=0",), "requirements.txt", "GPU=0 was asked for"),
    (False, ("GPU=1",), "requirements-gpu.txt", "GPU=1 was asked for"),
])
def test_make_run_picks_the_gpu_requirements_when_a_gpu_is_listed(tmp_path, fake_smi, arguments, chosen, why):
    if not fake_smi and subprocess.run(["sh", "-c", "command -v nvidia-smi"], capture_output=True).returncode == 0:
        pytest.skip("this machine has a real nvidia-smi")
    planned = _make(*arguments, fake_smi=fake_smi, tmp_path=tmp_path)
    assert f"pip install --quiet -r {chosen}" in planned and why in planned, planned
    mode = "gpu" if chosen == "requirements-gpu.txt" else "cpu"
    assert f"touch .venv/.runtime-{mode}" in planned and "rm -f .venv/.runtime-*" in planned  # a switch reinstalls
    assert ("pip uninstall" in planned) == (mode == "cpu")  # back to the CPU set: the CUDA libraries go


def test_the_gpu_pins_satisfy_tensorflows_own_and_cuda_ranges():
    """Read from the installed tensorflow's metadata: every library its and-cuda extra pulls is pinned exactly,
    inside the extra's range, and the rest of the runtime set is requirements.txt's."""
    extra = [Requirement(text) for text in importlib.metadata.requires("tensorflow")
             if Requirement(text).marker and Requirement(text).marker.evaluate({"extra": "and-cuda"})]
    lines = [line.strip() for line in (ROOT / "requirements-gpu.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    pins = {Requirement(line).name: Requirement(line) for line in lines}
    assert extra and {requirement.name for requirement in extra} <= set(pins)
    for requirement in extra:
        pinned = pins[requirement.name]
        (version,) = [spec.version for spec in pinned.specifier if spec.operator == "=="]
        assert requirement.specifier.contains(version), (requirement, version)
    assert pins["tensorflow"].extras == {"and-cuda"} and str(pins["tensorflow"].specifier) == "==2.21.0"
    cpu = {Requirement(line).name: str(Requirement(line).specifier) for line in (ROOT / "requirements.txt")
           .read_text().splitlines() if line.strip() and not line.startswith("#")}
    assert all(str(pins[name].specifier) == specifier for name, specifier in cpu.items())


@pytest.mark.app
def test_a_driver_without_a_gpu_in_tensorflow_gets_a_notice_with_the_fix(tmp_path, monkeypatch):
    from app_support import open_page

    from transformer.runtime import device

    (tmp_path / "nvidia-smi").write_text(FAKE_SMI)
    (tmp_path / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    for cached in (device.driver_gpus, device.missing_gpu_notice):
        cached.cache_clear()
    try:
        notice = device.missing_gpu_notice()
        assert "NVIDIA A100-SXM4-40GB" in notice and "make run GPU=1" in notice
        at = open_page("home")
        assert any("make run GPU=1" in warning.value for warning in at.warning), [w.value for w in at.warning]
    finally:
        for cached in (device.driver_gpus, device.missing_gpu_notice):
            cached.cache_clear()


def test_the_status_line_gives_the_gpus_memory_in_use_and_total(monkeypatch):
    from ui import run_views

    monkeypatch.setattr(run_views.service, "memory_in_use", lambda device: (int(0.5 * 2**30), 24 * 2**30)
                        if "GPU" in device else None)
    assert run_views.memory_text("/GPU:0") == "**GPU memory** 0.50 / 24.0 GB"
    assert run_views.memory_text("/CPU:0") == ""
    monkeypatch.setattr(run_views.service, "memory_in_use", lambda device: (2**30, None))  # the driver gave no total
    assert run_views.memory_text("/GPU:0") == "**GPU memory** 1.00 GB"


@pytest.mark.slow
def test_a_gpu_server_warms_the_kernels_once_and_a_cpu_server_does_not():
    """An H200 spent 4.0–4.7 s of a fresh process's first run launching each GPU kernel once (docs/gpu.md): the
    server pays it at start, in the background (`ui.preload`), on the shared cache, once."""
    out = run_with_fake_gpu(
        "from transformer.live.model_cache import MODELS\nfrom transformer.service import warm_up_device\n"
        "fake_gpu.record_scopes()\n"
        "print(warm_up_device(), warm_up_device(), MODELS.builds, sorted({s for _, s in fake_gpu.OPS}, key=str))\n"
    )
    assert out.strip() == "/GPU:0 None 1 ['/GPU:0']"
    on_cpu = subprocess.run([sys.executable, "-c", "from transformer.live.model_cache import MODELS\n"
                             "from transformer.service import warm_up_device\nprint(warm_up_device(), MODELS.builds)"],
                            cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""),
                            capture_output=True, text=True, timeout=300)
    assert on_cpu.stdout.strip() == "None 0", on_cpu.stderr[-2000:]


@pytest.mark.slow
def test_the_start_up_warm_up_computes_the_dot_product_labs_experiment_once_for_every_session():
    """The lab's first visit waited 0.5–0.8 s for a fixed NumPy experiment; the server computes it at start."""
    from ui import data, preload

    data.scaling_experiment.cache_clear()
    preload._warm_up()
    assert data.scaling_experiment.cache_info().currsize == 1
    assert data.scaling_experiment() is data.scaling_experiment()  # the page reads the one computed at start


@pytest.mark.slow
def test_the_engine_import_makes_the_cpu_allocator_a_pool_and_leaves_scikit_learn_out():
    """The engine's import chooses TensorFlow's BFC pool for the CPU (why: docs/performance.md) unless the user set
    TF_CPU_ALLOCATOR_USE_BFC. A pool keeps statistics; malloc has none to give. And it leaves scikit-learn out of
    Keras's import (its scikit-learn wrappers would import it and SciPy: ~1 s and ~58 MB a process), which the
    digits task still imports when it needs it. The children run with oneDNN's optimisations off: where TensorFlow
    turns them on (x86 CPUs with AVX-512 VNNI), its CPU allocator is oneDNN's own pool, with statistics, whatever the
    variable says."""
    code = ("import sys, transformer, tensorflow as tf\n"
            "print('sklearn' in sys.modules)\n"
            "transformer.run_live(transformer.LiveConfig(d_model=8, num_heads=2))\n"
            "try:\n    print(tf.config.experimental.get_memory_info('CPU:0')['peak'] > 0)\n"
            "except ValueError:\n    print('no pool')\n"
            "from transformer.tasks.images import _digits\n"
            "print(_digits()[0].shape)\n")
    env = {key: value for key, value in os.environ.items() if key != "TF_CPU_ALLOCATOR_USE_BFC"}
    for chosen, expected in ((None, "False True (1797, 8, 8)"), ("false", "False no pool (1797, 8, 8)")):
        child = dict(env, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", TF_ENABLE_ONEDNN_OPTS="0",
                     **({} if chosen is None else {"TF_CPU_ALLOCATOR_USE_BFC": chosen}))
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True,
                             timeout=300)
        assert " ".join(out.stdout.split()) == expected, (chosen, out.stdout, out.stderr[-2000:])
