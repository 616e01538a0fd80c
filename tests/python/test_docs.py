"""The docs tell the truth: quoted figures equal the demo month's, and the generated maps are current.

One build of the demo month (the month `gpucost demo` prints, generated with the command's own
defaults) serves every test here: its marts give the figures (scripts/docs_figures.py), its manifest the
lineage (scripts/architecture.py).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from .conftest import PROJECT_DIR

SCRIPTS = PROJECT_DIR / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


figures = _load("docs_figures")
architecture = _load("architecture")


@pytest.fixture(scope="module")
def demo_build(tmp_path_factory) -> tuple[Path, Path]:
    """The demo month through `gpucost demo`, the command the README's first command runs (generate,
    dbt build, publish, summary), models only (dbt's DBT_EXCLUDE_RESOURCE_TYPES: the other suites
    run the data and unit tests), dbt's target and logs in this test's folder.

    Returns the warehouse file and dbt's target folder (with manifest.json)."""
    import contextlib
    import io

    from gpucost.commands.cli import main

    work = tmp_path_factory.mktemp("demo_month")
    landing, warehouse = work / "landing", work / "gpucost.duckdb"
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setenv("DBT_EXCLUDE_RESOURCE_TYPES", "unit_test test")
        patch.setenv("DBT_TARGET_PATH", str(work / "target"))
        patch.setenv("DBT_LOG_PATH", str(work / "logs"))
        patch.setenv("DBT_LOG_LEVEL_FILE", "none")
        patch.setenv("GPUCOST_PROJECT_DIR", str(PROJECT_DIR))
        arguments = [*figures.demo_arguments(), "--out", str(landing)]
        code = main(["demo", *arguments, "--warehouse", str(warehouse)])
    assert code == 0, printed.getvalue()[-6000:]
    assert "RECONCILED to the cent" in printed.getvalue()
    assert (work / "parquet").is_dir()  # published for BI readers, beside the warehouse
    return warehouse, work / "target"


@pytest.fixture(scope="module")
def demo_values(demo_build) -> dict[tuple[str, str], str]:
    warehouse, _ = demo_build
    wanted = {("figure", name) for name in [*figures.INLINE_FIGURES, *figures.SETTING_FIGURES]}
    wanted |= {("block", name) for name in figures.BLOCKS}
    return figures.compute(warehouse, wanted)


def _all_quotes() -> list:
    return [quote for page in figures.PAGES for quote in figures.quotes(page)]


def test_pages_mark_the_demo_figures():
    """The README's demo block and bill are marked, so the check below covers them."""
    names = {(quote.page.name, quote.name) for quote in _all_quotes()}
    assert ("README.md", "demo_summary") in names
    assert ("README.md", "bill_total") in names


def test_every_quoted_figure_equals_the_demo_month(demo_values):
    found = _all_quotes()
    assert len(found) >= 10, "the pages should mark their demo figures"
    assert figures.problems(found, demo_values) == []


def test_the_demo_summary_is_what_the_demo_prints(demo_values):
    """The README block is `gpucost summary` on the demo month: the bill line reads RECONCILED."""
    block = demo_values[("block", "demo_summary")]
    assert "RECONCILED to the cent" in block
    assert block.startswith(f"Chargeback {figures.demo_month()} ")
    assert demo_values[("figure", "bill_total")] in block


def test_a_figure_off_by_one_cent_fails(demo_values):
    """Tamper with one quoted figure by a cent: the check names the page and both values."""
    readme = PROJECT_DIR / "README.md"
    text = readme.read_text(encoding="utf-8")
    right = demo_values[("figure", "bill_total")]
    shown = f"<!-- figure: bill_total -->{right}<!-- /figure -->"
    assert shown in text
    whole, cents = right.rsplit(".", 1)
    off = f"{whole}.{(int(cents) + 1) % 100:02d}"
    tampered = text.replace(shown, f"<!-- figure: bill_total -->{off}<!-- /figure -->")
    found = figures.quotes(readme, tampered)
    assert figures.problems(found, demo_values) == [
        f"README.md: figure 'bill_total' shows {off!r}, the demo gives {right!r}"
    ]
    # and --write's rewrite puts the demo's value back
    assert figures.rewrite(tampered, demo_values) == text


def test_an_unknown_figure_name_fails():
    page = PROJECT_DIR / "docs" / "x.md"
    found = figures.quotes(page, "a <!-- figure: no_such_figure -->1.00<!-- /figure --> b")
    assert figures.problems(found, {}) == ["docs/x.md: unknown figure 'no_such_figure'"]


def test_the_demo_month_of_the_test_is_the_demo_commands():
    """The test builds what `gpucost demo` builds: the same generator flags as its defaults."""
    from gpucost.commands.cli import build_parser

    defaults = build_parser().parse_args(["demo"])
    flags = dict(flag.lstrip("-").split("=", 1) for flag in figures.demo_arguments())
    for name, value in flags.items():
        assert str(getattr(defaults, name.replace("-", "_"))) == value


def test_architecture_doc_is_current(demo_build):
    _, target = demo_build
    assert architecture.main(["--check", "--manifest", str(target / "manifest.json")]) == 0


def test_a_stale_architecture_doc_fails_the_check(demo_build, tmp_path):
    _, target = demo_build
    doc = architecture.DOC.read_text(encoding="utf-8")
    stale = tmp_path / "architecture.md"
    stale.write_text(doc.replace("<br/>", "<br/>x", 1), encoding="utf-8")
    manifest = str(target / "manifest.json")
    assert architecture.main(["--check", "--manifest", manifest, "--doc", str(stale)]) == 1


def test_architecture_follows_a_renamed_model_and_module(demo_build, tmp_path):
    """Nothing is hard-coded: a model moved to another folder and a new module change the maps."""
    _, target = demo_build
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    doc = architecture.DOC.read_text(encoding="utf-8")
    moved = copy.deepcopy(manifest)
    model = next(node for node in moved["nodes"].values() if node["resource_type"] == "model")
    model["original_file_path"] = (
        "models/marts/renamed_area/" + Path(model["original_file_path"]).name
    )
    assert architecture.render(doc, moved) != doc
    assert "models/marts/renamed_area" in architecture.lineage(moved)

    package = tmp_path / "gpucost"
    (package / "newpart").mkdir(parents=True)
    (package / "__init__.py").write_text('"""Top."""\n')
    (package / "newpart" / "__init__.py").write_text('"""A new part. More words."""\n')
    (package / "newpart" / "thing.py").write_text('"""Does one thing. Then more."""\n')
    text = architecture.package_map(package)
    assert "| `gpucost.newpart.thing` | Does one thing. |" in text
    assert "**`gpucost.newpart`**: A new part." in text


def test_settings_table_defaults_are_the_projects():
    """docs/usage.md's settings table: each single-var row's default is the one dbt_project.yml sets."""
    import re

    import yaml

    project_vars = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["vars"]
    rows = re.findall(
        r"^\| `(gpucost_[a-z_]+)` \| `([^`]*)` \|",
        (PROJECT_DIR / "docs" / "usage.md").read_text(encoding="utf-8"),
        flags=re.M,
    )
    assert len(rows) >= 5, "the settings table moved: update this test"

    def as_yaml(value: object) -> str:  # a boolean as YAML spells it (false, not False)
        return str(value).lower() if isinstance(value, bool) else str(value)

    wrong = [
        (name, shown, project_vars.get(name, "<not a var>"))
        for name, shown in rows
        if as_yaml(project_vars.get(name, "<not a var>")) != shown
    ]
    assert wrong == []


def _names_in(module_file: Path) -> set[str]:
    import ast

    tree = ast.parse(module_file.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_modules_the_docs_name_exist():
    """Every `gpucost.<module>[.<name>]` a page names is a module of src/ (and a name defined in it):
    a module renamed or moved without its docs fails here."""
    import re

    source = PROJECT_DIR / "src"
    dotted = re.compile(r"\bgpucost(?:\.[A-Za-z_]\w*)+(?![\w/-])")
    missing = []
    for page in figures.PAGES:
        for name in sorted(set(dotted.findall(page.read_text(encoding="utf-8")))):
            parts = name.split(".")
            if parts[-1] == "duckdb":  # the warehouse file, gpucost.duckdb
                continue
            depth = len(parts)
            while depth > 1:
                base = source.joinpath(*parts[:depth])
                if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
                    break
                depth -= 1
            base = source.joinpath(*parts[:depth])
            module = (
                base.with_suffix(".py")
                if base.with_suffix(".py").exists()
                else base / "__init__.py"
            )
            rest = parts[depth:]
            if rest and (depth == 1 or rest[0] not in _names_in(module)):
                missing.append(f"{page.name}: {name}")
    assert missing == []
