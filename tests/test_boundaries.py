"""The house's rules, checked from the source: floors (ground floor ``core`` →
``accounts`` → ``monitors`` → ``alerts`` and ``insights`` → the site
``cronradar``), no import cycle, no import from a lower floor to a higher one,
no import inside a function without a comment saying why, the packages that are
installed, and the one writer of incidents."""
import ast
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from tests.live import ROOT

FLOORS = {"core": 0, "accounts": 1, "monitors": 2, "alerts": 3, "insights": 3, "cronradar": 4}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    """Every module of the project's packages (migrations and commands included)."""
    return {_module_name(p): p for pkg in FLOORS for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(path: Path, modules) -> list[tuple[str, int, bool, bool]]:
    """(imported project module, line, inside a function, a comment says why) for
    every import of ``path`` that names one of ``modules``."""
    source = path.read_text()
    lines = source.splitlines()
    found = []

    def commented(node) -> bool:
        """A comment on the import's line, or on the line above its block of imports."""
        if "#" in lines[node.lineno - 1]:
            return True
        at = node.lineno - 2
        while at >= 0 and lines[at].strip().startswith(("from ", "import ")):
            at -= 1
        return at >= 0 and lines[at].strip().startswith("#")

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            targets = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                targets = [f"{child.module}.{a.name}" if f"{child.module}.{a.name}" in modules
                           else child.module for a in child.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    found.append((target, child.lineno, in_function, commented(child)))
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


@pytest.fixture(scope="module")
def graph():
    modules = _sources()
    edges = defaultdict(set)
    details = []
    for name, path in modules.items():
        for target, line, in_function, why in _imports(path, modules):
            if target != name:
                edges[name].add(target)
                details.append((name, target, f"{path.relative_to(ROOT)}:{line}", in_function,
                                why))
    return modules, edges, details


def _floor(module: str) -> tuple[str, int]:
    top = module.split(".")[0]
    return top, FLOORS[top]


def test_the_import_graph_has_no_cycle(graph):
    modules, edges, _ = graph
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for module in sorted(modules):
        if module not in state:
            visit(module)
    assert sum(map(len, edges.values())) > 200  # the graph was read
    assert cycles == []


def test_no_import_runs_from_a_lower_floor_to_a_higher_one(graph):
    _, _, details = graph
    wrong = []
    for source, target, where, _, _ in details:
        (src_pkg, src_floor), (dst_pkg, dst_floor) = _floor(source), _floor(target)
        if src_pkg != dst_pkg and dst_floor >= src_floor:
            wrong.append(f"{where}: {source} -> {target}")
    assert wrong == []


@pytest.mark.parametrize("package, forbidden", [
    ("core", {"accounts", "monitors", "alerts", "insights", "cronradar"}),
    ("accounts", {"monitors", "alerts", "insights", "cronradar"}),
    ("monitors", {"alerts", "insights", "cronradar"}),
    ("alerts", {"insights", "cronradar"}),
    ("insights", {"alerts", "cronradar"}),
])
def test_each_floor_imports_only_what_is_below_it(graph, package, forbidden):
    _, _, details = graph
    wrong = [f"{where}: {source} -> {target}" for source, target, where, _, _ in details
             if source.split(".")[0] == package and target.split(".")[0] in forbidden]
    assert wrong == []


def test_no_import_of_the_project_inside_a_function_without_a_comment(graph):
    _, _, details = graph
    wrong = [f"{where}: {source} -> {target}" for source, target, where, inside, why in details
             if inside and not why]
    assert wrong == []


def test_the_installed_packages_are_the_top_level_packages():
    """pyproject.toml's packages.find lists exactly the top-level packages that hold
    an __init__.py (tests aside), so an install has every wing."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = {p.rstrip("*") for p in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    found = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert listed == found == set(FLOORS)


WRITES = {"save", "update", "create", "bulk_create", "bulk_update", "get_or_create",
          "update_or_create", "insert_many", "update_many", "delete"}


def _writes_incidents(path: Path) -> list[str]:
    """Lines of ``path`` that write Incident rows: ``Incident.objects....<write>(...)``,
    ``sql.insert_many(Incident, ...)`` / ``update_many`` of incidents, or ``.save()``
    of a name or attribute called incident."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, text = node.func.attr, ast.unparse(node.func.value)
        if method not in WRITES or method == "delete":
            continue
        on_model = text.startswith("Incident.objects") or text.startswith("Incident(")
        in_sql = method in ("insert_many", "update_many") and node.args and \
            ast.unparse(node.args[0]) in ("Incident", "incidents")
        saved = method == "save" and "incident" in text.lower()
        if on_model or in_sql or saved:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_only_the_incident_state_machine_writes_incidents():
    """alerts/incidents.py is the one module that creates or changes Incident rows;
    escalation and flapping decide, it writes (migrations aside)."""
    writers = {}
    for name, path in _sources().items():
        if ".migrations." in name:
            continue
        if lines := _writes_incidents(path):
            writers[name] = lines
    assert sorted(writers) == ["alerts.incidents"], writers
    assert len(writers["alerts.incidents"]) >= 10  # the check sees the writes it is about


LOAD_MONITORS_ALONE = """
import sys, django
from pathlib import Path
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework",
                    "accounts", "monitors"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    USE_TZ=True, CRONRADAR_LIVENESS_INTERVAL=1.0, CRONRADAR_OUTAGE_THRESHOLD=10.0,
    CRONRADAR_TICK_SECONDS=0.5, CRONRADAR_BASE_URL="http://x", CRONRADAR_PING_BODY_LIMIT=10,
    CRONRADAR_TRUST_X_FORWARDED_FOR=False, PRODUCTION=False,
    DATA_DIR=Path("/tmp/cronradar-boundary"), STATIC_ROOT=Path("/tmp/cronradar-boundary"),
)
django.setup()
import monitors.pings, monitors.evaluator, monitors.api, monitors.views, monitors.liveness
print(sorted(m for m in sys.modules if m.split(".")[0] == "alerts"))
"""


def test_no_monitors_module_imports_alerts():
    for path in sorted((ROOT / "monitors").rglob("*.py")):
        tree = ast.parse(Path(path).read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "alerts" for n in names), (path, names)


def test_monitors_loads_and_runs_without_alerts_installed():
    proc = subprocess.run([sys.executable, "-c", LOAD_MONITORS_ALONE], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
