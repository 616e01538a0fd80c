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
