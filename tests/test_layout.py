"""The layout's rules, read from the import statements (inside functions too) and from imports by
name (`importlib.import_module("...")`, `__import__("...")` with a literal name).

- No import cycle among the house's modules, the test suite's included.
- Product code (`workflows`, `activities`, `workers`, `policyforge`) never imports the test
  suite: the image carries no `tests/`.
- The public import surface (`policyforge`) is a facade: no other package imports it, so the
  CLI and the workers stand without it.
- The workflow imports no activity or worker module (it runs in Temporal's sandbox, and it calls
  activities through `workflows/contracts/activities.py` only).
- Activities import no worker module.
- The stages (`activities.llm`, `activities.training`, `activities.judging`) import none of each
  other; the shared packages they build on (`artifacts`, `logs`, `envs`, `sandbox`, `runner`)
  import no stage.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("workflows", "activities", "workers", "policyforge")
TESTS = "tests"
STAGES = ("activities.llm", "activities.training", "activities.judging")
SHARED = (
    "activities.artifacts",
    "activities.logs",
    "activities.envs",
    "activities.sandbox",
    "activities.runner",
    "activities.behaviours",
    "activities.lessons",
)


def _modules() -> dict[str, Path]:
    found = {}
    for package in (*PACKAGES, TESTS):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports() -> dict[str, set[str]]:
    """module -> the project modules it imports (the deepest module each name resolves to)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            elif by_name := _imported_by_name(node):
                names = [by_name]
            for name in names:
                target = resolve(name)
                if target and target != module:
                    graph[module].add(target)
        graph.setdefault(module, set())
    return graph


def _imported_by_name(node: ast.AST) -> str | None:
    """The module a call such as `importlib.import_module("tests.x")` imports, if literal."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def _within(module: str, packages: tuple[str, ...] | str) -> str | None:
    for package in (packages,) if isinstance(packages, str) else packages:
        if module == package or module.startswith(package + "."):
            return package
    return None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _violations(rule) -> list[str]:  # noqa: ANN001
    return sorted(
        f"{module} imports {target}"
        for module, targets in _imports().items()
        for target in targets
        if rule(module, target)
    )


def test_no_import_cycles() -> None:
    assert _cycles(_imports()) == []


def test_product_code_never_imports_the_test_suite() -> None:
    assert _violations(lambda m, t: _within(m, PACKAGES) and _within(t, TESTS)) == []


def test_nothing_in_the_product_imports_the_public_facade() -> None:
    inner = ("workflows", "activities", "workers")
    assert _violations(lambda m, t: _within(m, inner) and _within(t, "policyforge")) == []


def test_the_rules_see_imports_by_name_and_from_tests() -> None:
    # The checks above would pass vacuously if the scan missed these forms.
    tree = ast.parse("import importlib\nimportlib.import_module('tests.fakes.llm_server')")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [_imported_by_name(c) for c in calls] == ["tests.fakes.llm_server"]
    graph = _imports()
    assert "tests.fakes.llm_server" in graph["tests.chaos.stack"]


def test_the_workflow_imports_no_activity_or_worker_code() -> None:
    assert (
        _violations(lambda m, t: _within(m, "workflows") and _within(t, ("activities", "workers")))
        == []
    )


def test_activities_import_no_worker_code() -> None:
    assert _violations(lambda m, t: _within(m, "activities") and _within(t, "workers")) == []


def test_stages_import_none_of_each_other() -> None:
    def crosses(module: str, target: str) -> bool:
        mine, theirs = _within(module, STAGES), _within(target, STAGES)
        return bool(mine and theirs and mine != theirs)

    assert _violations(crosses) == []


def test_shared_packages_import_no_stage() -> None:
    assert _violations(lambda m, t: _within(m, SHARED) and _within(t, STAGES)) == []


def test_the_rules_see_real_imports() -> None:
    """The graph is not empty by mistake: known edges are in it."""
    graph = _imports()
    assert "workflows.contracts.activities" in graph["workflows.step_base"]
    assert "activities.sandbox.client" in graph["activities.runner.child"] | {
        t for m, ts in graph.items() if m.startswith("activities.runner") for t in ts
    }
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
