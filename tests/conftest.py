"""Shared fixtures: tiny configs that compile and run in seconds."""

from __future__ import annotations

import pytest

from acl.config import parse_config


def pytest_configure(config):
    # Many tests compile the same small programs (the tiny loop, one teacher's update):
    # JAX's persistent cache turns every repeat, within a run and across xdist workers,
    # into a read. ACL_JAX_CACHE points it elsewhere (a fresh dir measures a cold run).
    from acl.run.results import enable_compilation_cache

    enable_compilation_cache()
    if "not slow" in (config.getoption("markexpr") or ""):
        # A session without learning tests: tests/compile_effort.py says why.
        from tests.compile_effort import fusion_emitters_off_for_this_process

        fusion_emitters_off_for_this_process()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture of the test, module-scoped ones included, compiles: a fixture's
    # programs and the test's must come from the same options (tests/compile_effort.py).
    from tests.compile_effort import set_compile_effort

    set_compile_effort(low=item.get_closest_marker("slow") is None)


TINY = {
    "name": "tiny",
    "env": {"name": "cartpole", "max_episode_steps": 50},
    "teacher": "random",
    "agent": {"name": "ppo", "num_minibatches": 2, "update_epochs": 2, "hidden_sizes": [16]},
    "loop": {"num_envs": 4, "num_steps": 16, "total_env_steps": 768, "eval_every": 256},
    "eval": {"num_test_tasks": 8},
    "num_seeds": 2,
}


def tiny_config(**sections):
    """TINY with sections merged in, e.g. tiny_config(loop={"reinit_every": 128})."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in TINY.items()}
    for name, values in sections.items():
        if isinstance(values, dict) and isinstance(data.get(name), dict):
            data[name].update(values)
        else:
            data[name] = values
    return parse_config(data)


@pytest.fixture
def tiny():
    return tiny_config()


def run_tiny_with_teacher(tmp_path, teacher: dict):
    """`experiments.run` on TINY with `teacher` (a registered name and its keys): the run
    directory and its metrics.csv rows, after asserting the run exited 0."""
    import csv

    import yaml

    from experiments import run

    path = tmp_path / f"{teacher['name']}.yaml"
    path.write_text(yaml.safe_dump({**TINY, "teacher": teacher}))
    out = tmp_path / "run"
    assert run.main(["--config", str(path), "--out", str(out), "--no-progress"]) == 0
    return out, list(csv.DictReader((out / "metrics.csv").open()))


def once_per_session(tmp_path_factory, worker_id: str, name: str, produce, timeout=900):
    """A folder that `produce(folder)` fills once per test session, shared by the xdist
    workers (each would otherwise run a module fixture of its own): the first worker to
    ask produces it, the others wait for it. For fixtures that only write files, such as
    a subprocess's runs."""
    import os
    import time

    if worker_id == "master":  # no xdist
        folder = tmp_path_factory.mktemp(name)
        produce(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent  # one per session, above the workers'
    folder, marker = shared / name, shared / f"{name}.done"
    try:
        os.close(os.open(shared / f"{name}.lock", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        waited = 0.0
        while not marker.exists():
            if waited > timeout:
                pytest.fail(f"{name}: another worker did not finish producing it")
            time.sleep(0.2)
            waited += 0.2
        if marker.read_text() != "ok":
            pytest.fail(f"{name}: producing it failed in another worker")
        return folder
    try:
        folder.mkdir()
        produce(folder)
    except BaseException:
        marker.write_text("failed")
        raise
    marker.write_text("ok")
    return folder
