"""Every config key a Python model's YAML sets reaches the model.

dbt hands a Python model only the config keys its parser finds as literal ``dbt.config.get("key")``
calls in the model's own file (``config_dict`` in the compiled code); ``get`` returns None for any
other key. A key read inside ``float(dbt.config.get("key") or 0)`` (the parser does not look inside
``or``) or in a helper module is silently None: the vars behind it do nothing. This test runs dbt's
own parser over each model file and checks the keys against the YAML.
"""

from __future__ import annotations

import ast

import pytest
import yaml
from dbt.parser.models import PythonParseVisitor

from .conftest import PROJECT_DIR

MODELS = PROJECT_DIR / "python_models"
# dbt's own configs (applied by dbt, not read by the model)
DBT_KEYS = {"materialized", "schema", "alias", "tags", "enabled", "database", "persist_docs"}
# ... and the incremental materialisation's (int_attribution_model_versions, int_workload_attribution_scores)
DBT_KEYS |= {"incremental_strategy", "unique_key", "on_schema_change", "merge_clauses"}


def _yaml_configs() -> dict[str, dict]:
    configs = {}
    for path in MODELS.rglob("*.yml"):
        for node in yaml.safe_load(path.read_text(encoding="utf-8")).get("models", []):
            configs[node["name"]] = node.get("config", {}) or {}
    return configs


def _keys_dbt_passes(source: str) -> set[str]:
    visitor = PythonParseVisitor(None)
    visitor.visit(ast.parse(source))
    return {args[0] for func, args, _ in visitor.dbt_function_calls if func == "get" and args}


CONFIGS = _yaml_configs()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_yaml_config_key_reaches_the_model(name):
    (path,) = MODELS.rglob(f"{name}.py")
    wanted = set(CONFIGS[name]) - DBT_KEYS
    passed = _keys_dbt_passes(path.read_text(encoding="utf-8"))
    assert wanted <= passed, f"{name}: dbt would pass None for {sorted(wanted - passed)}"


def test_the_parser_check_catches_a_nested_read():
    # the shape that silently lost the attribution's vars and gpucost_lazy_min_rows
    assert _keys_dbt_passes('x = float(dbt.config.get("seed") or 0)') == set()
    assert _keys_dbt_passes("x = helper(dbt)") == set()
    assert _keys_dbt_passes('x = dbt.config.get("seed")') == {"seed"}
    assert _keys_dbt_passes('x = f(dbt.config.get("seed"))') == {"seed"}
    assert len(CONFIGS) == len(list(MODELS.rglob("*.py")))


# dbt runs Python models on its threads, in one process. Importing ``P.sub`` takes the lock of
# ``P.sub`` and then imports ``P``; when ``P``'s __init__ imports its own submodules (an eager
# package) and another thread is running it, each thread waits for the other's lock and Python
# raises _DeadlockError (seen in a two-thread build: int_project_team_handovers beside
# int_attribution_model_versions). Importing ``P`` itself first waits holding no lock.
SRC = PROJECT_DIR / "src"


def _eager_packages() -> set[str]:
    eager = set()
    for init in (SRC / "gpucost").rglob("__init__.py"):
        package = ".".join(init.parent.relative_to(SRC).parts)
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and (
                node.level == 1 or (node.module or "").startswith(package + ".")
            ):
                eager.add(package)
    return eager


def _submodule_first_imports(source: str, eager: set[str]) -> list[str]:
    """The top-level imports of a submodule of an eager package not imported before it."""
    imported: set[str] = set()
    wrong = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
            wrong += [f"{module} before {a}" for a in sorted(ancestors & eager - imported)]
            imported |= ancestors | {module}
    return wrong


EAGER = _eager_packages()


@pytest.mark.parametrize("path", sorted(MODELS.rglob("*.py")), ids=lambda p: p.stem)
def test_a_model_imports_an_eager_package_before_its_submodules(path):
    assert _submodule_first_imports(path.read_text(encoding="utf-8"), EAGER) == []


def test_the_import_check_catches_a_submodule_first():
    assert "gpucost.core.attribution" in EAGER and "gpucost.engines" not in EAGER
    first = "from gpucost.core.attribution.cold_start import LEVELS\n"
    assert _submodule_first_imports(first, EAGER) == [
        "gpucost.core.attribution.cold_start before gpucost.core.attribution"
    ]
    assert _submodule_first_imports("import gpucost.core.attribution\n" + first, EAGER) == []
    assert _submodule_first_imports("from gpucost.core.attribution import x\n" + first, EAGER) == []
    assert _submodule_first_imports("from gpucost.engines.arrow_io import rows_of\n", EAGER) == []
