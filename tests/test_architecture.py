"""The architecture's rules that a parser can check (docs/design.md):

- no module of acl/ discovers what a teacher or an agent can do by probing it: no
  `getattr`, `hasattr`, `inspect.signature` or `__getattr__`, except the entries of
  `ALLOWED`, each with the reason it is not such a probe;
- the loop's iteration body stays short, and the loop code does not branch on the task
  layout or the device layout: those are pieces composed around it (acl.loop.tasks,
  acl.loop.placement).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "acl"
LOOP = LIBRARY / "loop" / "train.py"
PROBES = ("getattr", "hasattr", "signature")

_FIELD = "reads a field of a typed config, metrics or context struct by its name"
ALLOWED: dict[tuple[str, str, str], str] = {
    ("acl/benchmark/runner.py", "_Program.run", "getattr(metrics)"): _FIELD,
    ("acl/benchmark/stats.py", "rliable_modules", "signature(original)"): (
        "adapts a function of the rliable library, not a teacher or an agent"
    ),
    ("acl/config.py", "parse_config", "getattr(defaults)"): _FIELD,
    ("acl/config.py", "_get", "getattr(node)"): _FIELD,
    ("acl/config.py", "_validate_challenge", "getattr(challenge)"): _FIELD,
    ("acl/config.py", "config_keys", "getattr(factory)"): (
        "a registry factory's keys: every teacher and agent factory declares `config_keys` "
        "(tests/test_hparams.py); an env class declares its static config as its "
        "constructor's parameters"
    ),
    ("acl/config.py", "config_keys", "signature(factory)"): (
        "an env class's constructor parameters are its declared static config"
    ),
    ("acl/config.py", "replace_config", "getattr(config)"): _FIELD,
    ("acl/core/hparams.py", "_normal", "hasattr(value)"): (
        "tells an array value from a scalar one while validating a hyperparameter"
    ),
    ("acl/core/hparams.py", "leaf_specs", "getattr(obj)"): (
        "flax's marker of a struct dataclass, read to walk declared params"
    ),
    ("acl/core/hparams.py", "validate", "getattr(obj)"): _FIELD,
    ("acl/core/hparams.py", "leaves", "getattr(params)"): _FIELD,
    (
        "acl/core/hparams.py",
        "declare",
        "getattr(factory)",
    ): "a factory's name, for an error message",
    ("acl/run/distributed.py", "SilentRunDir", "def __getattr__"): (
        "the run directory of a process that writes nothing: every method is a no-op"
    ),
    ("acl/run/experiment.py", "check_finite", "getattr(metrics)"): _FIELD,
    ("acl/run/results.py", "per_task_values", "getattr(metrics)"): _FIELD,
    ("acl/run/results.py", "test_set_cvar_values", "getattr(metrics)"): _FIELD,
    ("acl/run/sweep.py", "check_sweep", "getattr(config)"): _FIELD,
    ("acl/teachers/base.py", "run_default", "getattr(context)"): (
        "the `RunContext` field a factory's `run_fields` names"
    ),
}
"""(module path, enclosing function, probe) -> why it is not a probe of a teacher or an
agent. The probe is the call's name and its first argument's source, e.g.
"getattr(metrics, name)"; "def __getattr__" for the method."""

ITERATION_BODY_LINES = 60
LAYOUT_WORDS = (
    "placement",
    "task_layout",
    "device_split",
    "instances",
    "mode",
    "task_pool",
    "pool",
    "shard_envs",
    "overlap_teacher",
    "role_axis",
    "env_axis",
    "drawn",
)
"""Names a branch on the task layout or the device layout would read."""


@dataclass(frozen=True)
class Probe:
    path: str
    function: str
    probe: str
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.function, self.probe)


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def probes_in(path: Path, root: Path = ROOT) -> list[Probe]:
    """Every getattr/hasattr/signature call and `__getattr__` definition in `path`, with
    the function it sits in."""
    tree = ast.parse(path.read_text())
    relative = path.relative_to(root).as_posix()
    found: list[Probe] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name if function == "<module>" else f"{function}.{child.name}"
                if child.name == "__getattr__":
                    found.append(Probe(relative, function, "def __getattr__", child.lineno))
            elif isinstance(child, ast.ClassDef):
                inner = child.name
            elif isinstance(child, ast.Call) and _call_name(child) in PROBES:
                first = ast.unparse(child.args[0]) if child.args else ""
                probe = f"{_call_name(child)}({first})"
                found.append(Probe(relative, function, probe, child.lineno))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def all_probes() -> list[Probe]:
    return [p for path in sorted(LIBRARY.rglob("*.py")) for p in probes_in(path)]


def test_no_module_of_acl_probes_a_teacher_or_an_agent():
    unexplained = [p for p in all_probes() if p.key not in ALLOWED]
    assert not unexplained, "probes not in ALLOWED (declare the capability instead):\n" + "\n".join(
        f"  {p.path}:{p.line} in {p.function}: {p.probe}" for p in unexplained
    )


def test_every_allowed_probe_still_exists():
    # A stale entry would let a new probe of the same shape in through the back door.
    present = {p.key for p in all_probes()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"ALLOWED entries that match nothing: {stale}"


def test_the_scan_finds_every_kind_of_probe(tmp_path):
    # The scan itself must be able to fail.
    path = tmp_path / "probing.py"
    path.write_text(
        "import inspect\n"
        "def f(teacher, agent):\n"
        "    return getattr(teacher, 'wrap_student', None), hasattr(agent, 'bind'), "
        "inspect.signature(agent.update)\n"
        "class Wrapper:\n"
        "    def __getattr__(self, name):\n"
        "        return name\n"
    )
    found = [(p.function, p.probe) for p in probes_in(path, tmp_path)]
    assert found == [
        ("f", "getattr(teacher)"),
        ("f", "hasattr(agent)"),
        ("f", "signature(agent.update)"),
        ("Wrapper", "def __getattr__"),
    ]


def _method(tree: ast.AST, cls: str, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    raise AssertionError(f"{cls}.{name} not found in {LOOP}")


def test_the_iteration_body_is_short():
    body = _method(ast.parse(LOOP.read_text()), "Trainer", "_iteration")
    lines = body.end_lineno - body.lineno + 1
    assert lines <= ITERATION_BODY_LINES, f"Trainer._iteration is {lines} lines"


def _names(node: ast.AST) -> set[str]:
    out = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            out.add(child.id)
        elif isinstance(child, ast.Attribute):
            out.add(child.attr)
    return out


def test_the_loop_does_not_branch_on_a_layout():
    tree = ast.parse(LOOP.read_text())
    branches = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            words = _names(node.test) & set(LAYOUT_WORDS)
            if words:
                branches.append(f"line {node.lineno}: {ast.unparse(node.test)}")
        elif isinstance(node, ast.Call) and _call_name(node) == "isinstance":
            branches.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not branches, "the loop branches on a layout:\n" + "\n".join(branches)
