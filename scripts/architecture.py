"""Generate the two maps in docs/architecture.md from the project itself.

1. The lineage: a Mermaid flowchart from the landing folders through base, staging,
   intermediate and Python models to the marts. It reads dbt's ``manifest.json`` (``dbt parse``
   writes it) and draws one box per model folder, not one per model, with an edge wherever a model
   of one folder reads a model (or seed, or source) of another. Landing folders come from the
   project's ``source()`` declarations and from the landing-relative paths that models pass to the
   landing macros (``{{ read_focus_exports('billing/focus') }}``).
2. The package map: every module of ``src/gpucost``, grouped by subpackage, with the first
   sentence of its docstring.

Nothing here names a model, a folder or a module: rename any of them, run this again, and the maps
follow. Each map is written between ``<!-- BEGIN GENERATED: <name> -->`` and
``<!-- END GENERATED: <name> -->`` in docs/architecture.md; the text around them is edited by hand.

    scripts/architecture.py            # dbt parse into a scratch folder, then rewrite the maps
    scripts/architecture.py --check    # exit 1 (and say which map) when the page is stale
    scripts/architecture.py --manifest target/manifest.json   # use a manifest already parsed
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
DOC = PROJECT_DIR / "docs" / "architecture.md"
PACKAGE = PROJECT_DIR / "src" / "gpucost"

# The order the layers are drawn in, left to right. A model folder's layer is the first of these
# words among its path parts; a Python model folder is "python".
LAYERS = ("landing", "seeds", "base", "staging", "intermediate", "python", "marts", "semantic")
LAYER_TITLES = {
    "landing": "landing zone folders",
    "seeds": "seeds",
    "base": "base: raw files read once",
    "staging": "staging: rename, cast, dedup",
    "intermediate": "intermediate: joins toward one purpose",
    "python": "Python models: the allocation core",
    "marts": "marts: public, contracted",
    "semantic": "semantic layer",
}
# A landing-relative path passed to a macro in a model: {{ some_macro('billing/focus', ...) }}.
# The path's leading folders up to the first glob, at most two:
# 'inventory/kube/**/*.json' -> inventory/kube.
LANDING_ARGUMENT = re.compile(r"\{\{\s*(\w+)\(\s*['\"]([a-z0-9_]+/[^'\"]*)['\"]")


def landing_folders(raw_code: str) -> set[str]:
    """The landing folders a model's code reads through a macro (dbt's own ref/source aside)."""
    folders = set()
    for macro, path in LANDING_ARGUMENT.findall(raw_code):
        if macro in ("ref", "source", "var", "config", "env_var"):
            continue
        plain = [part for part in path.split("/") if part and not re.search(r"[*?\[]", part)]
        kept = []
        for part in path.split("/"):
            if not part or re.search(r"[*?\[(]", part):
                break
            kept.append(part)
        if kept and plain:
            folders.add("/".join(kept[:2]))
    return folders


def parse_manifest(work: Path) -> Path:
    """Run ``dbt parse`` into a scratch target folder; returns the manifest's path."""
    sys.path.insert(0, str(PROJECT_DIR / "src"))
    from gpucost.commands.cli import dbt_env, dbt_executable

    landing = Path(os.environ.get("GPUCOST_LANDING_DIR", work / "landing"))
    warehouse = Path(os.environ.get("GPUCOST_WAREHOUSE", work / "parse.duckdb"))
    command = [dbt_executable(), "parse", "--project-dir", str(PROJECT_DIR)]
    command += ["--profiles-dir", str(PROJECT_DIR), "--target-path", str(work / "target")]
    command += ["--log-path", str(work / "logs")]
    result = subprocess.run(
        command, cwd=PROJECT_DIR, env=dbt_env(landing, warehouse), capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"dbt parse failed:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return work / "target" / "manifest.json"


def folder_of(node: dict) -> str:
    """The folder a node is drawn in: its file's folder, relative to the project."""
    return str(Path(node["original_file_path"]).parent)


def layer_of(folder: str, resource_type: str) -> str:
    if resource_type == "seed":
        return "seeds"
    parts = Path(folder).parts
    if parts and parts[0] == "python_models":
        return "python"
    for layer in LAYERS[2:]:
        if layer in parts:
            return layer
    return parts[1] if len(parts) > 1 else parts[0]


def box_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def lineage(manifest: dict) -> str:
    """The Mermaid lineage, one box per folder, followed by a table of what each box holds."""
    nodes = {
        unique_id: node
        for unique_id, node in manifest["nodes"].items()
        if node["resource_type"] in ("model", "seed")
    }
    boxes: dict[str, dict] = {}  # box name -> {layer, members}
    box_of: dict[str, str] = {}
    for unique_id, node in sorted(nodes.items()):
        box = "seeds" if node["resource_type"] == "seed" else folder_of(node)
        layer = layer_of(box, node["resource_type"])
        boxes.setdefault(box, {"layer": layer, "members": []})["members"].append(node["name"])
        box_of[unique_id] = box
    for unique_id, source in sorted(manifest.get("sources", {}).items()):
        location = source.get("external", {}) or {}
        where = str(location.get("location") or source.get("source_name"))
        box = "landing: " + source["source_name"]
        boxes.setdefault(box, {"layer": "landing", "members": []})["members"].append(
            f"{source['name']} ({where})" if where != source["source_name"] else source["name"]
        )
        box_of[unique_id] = box

    edges: set[tuple[str, str]] = set()
    for unique_id, node in nodes.items():
        for parent in node.get("depends_on", {}).get("nodes", []):
            if parent in box_of and box_of[parent] != box_of[unique_id]:
                edges.add((box_of[parent], box_of[unique_id]))
        if node["resource_type"] == "model":
            for path in sorted(landing_folders(node.get("raw_code", ""))):
                box = "landing: " + path
                entry = boxes.setdefault(box, {"layer": "landing", "members": []})
                entry["members"].append(f"read by {node['name']}")
                edges.add((box, box_of[unique_id]))

    def label(box: str) -> str:
        entry = boxes[box]
        if entry["layer"] == "landing":
            return box.removeprefix("landing: ")
        if box == "seeds":
            return f"seeds<br/>{len(entry['members'])} CSV"
        parts = Path(box).parts
        kept = [part for part in parts if part not in ("models", "base")] or list(parts)
        count = len(entry["members"])
        return f"{'/'.join(kept)}<br/>{count} model{'s' if count != 1 else ''}"

    lines = ["```mermaid", "flowchart LR"]
    layer_order = {layer: index for index, layer in enumerate(LAYERS)}
    by_layer: dict[str, list[str]] = defaultdict(list)
    for box, entry in boxes.items():
        by_layer[entry["layer"]].append(box)
    for layer in sorted(by_layer, key=lambda name: (layer_order.get(name, len(LAYERS)), name)):
        lines.append(f'    subgraph {box_id("layer_" + layer)}["{LAYER_TITLES.get(layer, layer)}"]')
        lines.append("        direction TB")
        for box in sorted(by_layer[layer]):
            lines.append(f'        {box_id(box)}["{label(box)}"]')
        lines.append("    end")
    for parent, child in sorted(edges):
        lines.append(f"    {box_id(parent)} --> {box_id(child)}")
    lines.append("```")
    lines.append("")
    lines.append("| box | layer | holds |")
    lines.append("|---|---|---|")
    for box in sorted(boxes, key=lambda b: (layer_order.get(boxes[b]["layer"], 99), b)):
        entry = boxes[box]
        members = ", ".join(
            member if member.startswith("read by ") else f"`{member}`"
            for member in sorted(entry["members"])
        )
        lines.append(f"| `{box}` | {entry['layer']} | {members} |")
    counts = defaultdict(int)
    for entry in boxes.values():
        counts[entry["layer"]] += 1 if entry["layer"] == "landing" else len(entry["members"])
    summary = ", ".join(
        f"{counts[layer]} {layer}{' folders' if layer == 'landing' else ''}"
        for layer in sorted(counts, key=lambda x: layer_order.get(x, 99))
    )
    lines.append("")
    lines.append(f"In all: {summary} ({len(boxes)} boxes, {len(edges)} edges).")
    return "\n".join(lines)


def first_sentence(docstring: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    if not docstring:
        return "(no docstring)"
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", paragraph)
    sentence = paragraph[: match.start() + 1] if match else paragraph
    return sentence.replace("|", "\\|")


def module_docstring(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))


def package_map(package: Path = PACKAGE) -> str:
    """One table per package folder: each module and the first sentence of its docstring."""
    lines: list[str] = []
    folders = sorted(
        {path.parent for path in package.rglob("*.py") if "__pycache__" not in path.parts},
        key=lambda folder: (folder != package, str(folder)),
    )
    root = package.parent
    for folder in folders:
        dotted = ".".join(folder.relative_to(root).parts)
        init = folder / "__init__.py"
        lines.append(
            f"**`{dotted}`**: {first_sentence(module_docstring(init) if init.exists() else None)}"
        )
        lines.append("")
        modules = sorted(path for path in folder.glob("*.py") if path.name != "__init__.py")
        if modules:
            lines.append("| module | purpose |")
            lines.append("|---|---|")
            for module in modules:
                name = f"{dotted}.{module.stem}"
                lines.append(f"| `{name}` | {first_sentence(module_docstring(module))} |")
            lines.append("")
    return "\n".join(lines).rstrip()


def replace_between(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{DOC}: markers for '{name}' are missing ({begin} ... {end})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def extract(text: str, name: str) -> str:
    """The generated text between a map's markers."""
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    return text.split(begin, 1)[1].split(end, 1)[0]


def render(text: str, manifest: dict, package: Path = PACKAGE) -> str:
    text = replace_between(text, "lineage", lineage(manifest))
    return replace_between(text, "packages", package_map(package))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the doc is out of date")
    parser.add_argument("--manifest", type=Path, help="a manifest.json (default: run dbt parse)")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    if args.manifest:
        manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    else:
        with tempfile.TemporaryDirectory(prefix="gpucost-architecture-") as work:
            manifest = json.loads(parse_manifest(Path(work)).read_text(encoding="utf-8"))
    current = args.doc.read_text(encoding="utf-8")
    wanted = render(current, manifest)
    if args.check:
        if current != wanted:
            stale = [
                name
                for name in ("lineage", "packages")
                if extract(current, name) != extract(wanted, name)
            ]
            print(
                f"{args.doc} is out of date ({', '.join(stale)}): run scripts/architecture.py",
                file=sys.stderr,
            )
            return 1
        print(f"{args.doc}: up to date")
        return 0
    if current != wanted:
        args.doc.write_text(wanted, encoding="utf-8")
        print(f"{args.doc}: rewritten")
    else:
        print(f"{args.doc}: already up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
