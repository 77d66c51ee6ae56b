"""Rewriting references to moved modules, for ``tools/restructure.py`` (which owns the move table,
the file moves and the command line). Given a move table (old module -> new module):

- Python imports (libcst): ``import old``, ``from old import x``, ``from parent import leaf``
  (split into one statement per moved module, keeping the local name), relative imports that
  resolve to a moved module, and attribute chains of a plain ``import old``.
- Python strings and comments (docstrings, ``python -m`` argument lists, monkeypatch targets):
  ``old`` dotted names and ``old/path.py`` file paths. Arguments of ``getLogger``/``get_tracer``/
  ``get_meter`` are left alone (a logger name is not a module path; renaming it changes output).
- Any other text (Makefile, docs, pyproject, YAML): the same dotted names and paths.

A name ``old.x`` is left alone when ``old.x`` is itself a module after the move (``sluicegate.config``
was a module and is now the package holding ``sluicegate.config.settings``), which is what makes a
second run a no-op.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import libcst as cst
from libcst.helpers import get_full_name_for_node

# Calls whose first argument is a telemetry name, not a module path (a metric renamed by the move
# would silently break the alert rules that query it).
NAME_CALLS = {"getLogger", "get_tracer", "get_meter", "getChild", "create_counter", "create_histogram",
              "create_gauge", "create_up_down_counter", "create_observable_gauge", "create_observable_counter",
              "create_observable_up_down_counter", "start_as_current_span", "start_span"}


def new_modules(moves: Mapping[str, str]) -> set[str]:
    """Every module name that exists after the moves (targets and the packages they live in)."""
    names = set(moves.values())
    for new in moves.values():
        parts = new.split(".")
        names.update(".".join(parts[:i]) for i in range(2, len(parts)))
    return names


class References:
    """The references one move table rewrites, in text and in Python source."""

    def __init__(self, moves: Mapping[str, str]) -> None:
        self.moves = dict(moves)
        self.new_modules = new_modules(moves)
        olds = sorted(moves, key=len, reverse=True)
        dotted = "|".join(re.escape(o) for o in olds)
        paths = "|".join(re.escape(o.replace(".", "/")) for o in olds)
        # group 1: dotted name (+ optional ".next"), group 3: file path ending in .py
        self.text_re = re.compile(rf"(?<![\w./])(?:({dotted})(\.\w+)?|({paths})\.py)(?![\w/])")
        # ``from sluicegate.config import load_settings`` in a doc or a ``python -c`` string: the old
        # module is now a package, so a name that is not one of its modules comes from the module it became.
        self.from_package_re = re.compile(r"(?<![\w.])from (%s) import (\w+)" % "|".join(
            re.escape(o) for o in olds if o in self.new_modules))
        parents = sorted({o.rpartition(".")[0] for o in moves})
        leaves = sorted({o.rpartition(".")[2] for o in moves})
        self.from_parent_re = re.compile(r"\bfrom\s+(?:\.[\w.]*|%s)\s+import\b" % "|".join(re.escape(p) for p in parents))
        self.leaf_re = re.compile(r"\b(?:%s)\b" % "|".join(re.escape(leaf) for leaf in leaves))

    # ------------------------------------------------------------------ text references
    def rewrite_text(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            if m.group(3):
                return self.moves[m.group(3).replace("/", ".")].replace(".", "/") + ".py"
            old, rest = m.group(1), m.group(2) or ""
            if old in self.new_modules and (not rest or f"{old}{rest}" in self.new_modules):
                return m.group(0)  # the package the old module became, or one of its modules
            return self.moves[old] + rest

        return self.from_package_re.sub(self._from_package, self.text_re.sub(sub, text))

    def _from_package(self, m: re.Match[str]) -> str:
        old, name = m.group(1), m.group(2)
        if f"{old}.{name}" in self.new_modules:
            return m.group(0)
        return f"from {self.moves[old]} import {name}"

    # ------------------------------------------------------------------ Python source
    def may_reference(self, source: str) -> bool:
        """Cheap pre-filter: only files naming an old module (dotted or path) or importing a leaf
        from its parent package (``from sluicegate import x``, relative imports) are parsed."""
        return bool(self.text_re.search(source)
                    or (self.from_parent_re.search(source) and self.leaf_re.search(source)))

    def rewrite_python(self, rel: str, source: str) -> str:
        if not self.may_reference(source) and module_of(rel) not in set(self.moves.values()):
            return source
        tree = cst.parse_module(source)
        rewriter = Rewriter(rel, self)
        new = tree.visit(rewriter)
        if rewriter.plain_imports:  # second pass: attribute chains seen before the import statement
            new = new.visit(rewriter)
        return new.code


# ------------------------------------------------------------------ Python imports
def module_of(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dotted(name: str) -> cst.Attribute | cst.Name:
    node: cst.Attribute | cst.Name | None = None
    for part in name.split("."):
        node = cst.Name(part) if node is None else cst.Attribute(node, cst.Name(part))
    assert node is not None
    return node


class Rewriter(cst.CSTTransformer):
    def __init__(self, rel: str, refs: References) -> None:
        self.refs, self.moves, self.new_modules = refs, refs.moves, refs.new_modules
        self.package = module_of(rel) if rel.endswith("__init__.py") else module_of(rel).rpartition(".")[0]
        reverse = {v: k for k, v in self.moves.items()}
        me = module_of(rel)
        self.moved_file = me in reverse
        if self.moved_file:  # its relative imports were written for the old place: made absolute
            self.package = reverse[me].rpartition(".")[0]
        self.plain_imports: set[str] = set()
        self._name_call_depth = 0

    # -- helpers
    def _absolute(self, node: cst.ImportFrom) -> str | None:
        base = get_full_name_for_node(node.module) if node.module is not None else ""
        if not node.relative:
            return base
        pkg = self.package.split(".") if self.package else []
        up = len(node.relative) - 1
        if up > len(pkg):
            return None
        anchor = pkg[: len(pkg) - up]
        return ".".join([*anchor, base] if base else anchor)

    def _from(self, module: str, names: list[cst.ImportAlias]) -> cst.ImportFrom:
        names = [n.with_changes(comma=cst.MaybeSentinel.DEFAULT) for n in names]
        return cst.ImportFrom(module=_dotted(module), names=names)

    def _split(self, node: cst.ImportFrom) -> list[cst.ImportFrom] | None:
        module = self._absolute(node)
        if module is None:
            return None
        if isinstance(node.names, cst.ImportStar):
            return [node.with_changes(module=_dotted(self.moves[module]), relative=[])] if module in self.moves else None
        if module in self.moves:
            if module in self.new_modules:  # now a package: its submodules stay, the old module's names move
                subs = [a for a in node.names if f"{module}.{a.evaluated_name}" in self.new_modules]
                names = [a for a in node.names if a not in subs]
                if not names:
                    return None
                out = [self._from(self.moves[module], names)]
                return [self._from(module, subs), *out] if subs else out
            return [node.with_changes(module=_dotted(self.moves[module]), relative=[])]
        moved = [a for a in node.names if f"{module}.{a.evaluated_name}" in self.moves]
        relative_moved = bool(node.relative) and self.moved_file
        if not moved and not relative_moved:
            return None
        kept = [a for a in node.names if a not in moved]
        out: list[cst.ImportFrom] = []
        if kept:
            out.append(node.with_changes(names=[*kept[:-1], kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]))
            if relative_moved:
                out[-1] = out[-1].with_changes(module=_dotted(module), relative=[])
        for alias in moved:
            parent, _, leaf = self.moves[f"{module}.{alias.evaluated_name}"].rpartition(".")
            local = alias.evaluated_alias or alias.evaluated_name
            new_alias = cst.ImportAlias(name=cst.Name(leaf),
                                        asname=None if local == leaf else cst.AsName(name=cst.Name(local)))
            out.append(self._from(parent, [new_alias]))
        return out

    # -- imports
    def leave_SimpleStatementLine(self, original, updated):  # noqa: ANN001, ANN201
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        parts = self._split(updated.body[0])
        if parts is None:
            return updated
        if len(parts) == 1:
            return updated.with_changes(body=parts)
        lines = [updated.with_changes(body=[parts[0]])]
        lines += [cst.SimpleStatementLine(body=[p]) for p in parts[1:]]
        return cst.FlattenSentinel(lines)

    def leave_ImportFrom(self, original, updated):  # noqa: ANN001, ANN201
        # an import sharing its line with other statements (a; b): rewrite the module only
        module = self._absolute(updated)
        if module in self.moves and module not in self.new_modules:
            return updated.with_changes(module=_dotted(self.moves[module]), relative=[])
        if updated.relative and self.moved_file and module:
            return updated.with_changes(module=_dotted(module), relative=[])
        return updated

    def leave_Import(self, original, updated):  # noqa: ANN001, ANN201
        names = []
        for alias in updated.names:
            name = get_full_name_for_node(alias.name)
            if name in self.moves:
                if alias.asname is None:
                    self.plain_imports.add(name)
                alias = alias.with_changes(name=_dotted(self.moves[name]))
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_Attribute(self, original, updated):  # noqa: ANN001, ANN201
        name = get_full_name_for_node(updated)
        if name in self.plain_imports:
            return _dotted(self.moves[name])
        return updated

    # -- strings and comments
    def visit_Call(self, node: cst.Call) -> None:
        func = get_full_name_for_node(node.func) or ""
        if func.rpartition(".")[2] in NAME_CALLS:
            self._name_call_depth += 1

    def leave_Call(self, original, updated):  # noqa: ANN001, ANN201
        func = get_full_name_for_node(original.func) or ""
        if func.rpartition(".")[2] in NAME_CALLS:
            self._name_call_depth -= 1
        return updated

    def leave_SimpleString(self, original, updated):  # noqa: ANN001, ANN201
        if self._name_call_depth:
            return updated
        return updated.with_changes(value=self.refs.rewrite_text(updated.value))

    def leave_FormattedStringText(self, original, updated):  # noqa: ANN001, ANN201
        if self._name_call_depth:
            return updated
        return updated.with_changes(value=self.refs.rewrite_text(updated.value))

    def leave_Comment(self, original, updated):  # noqa: ANN001, ANN201
        return updated.with_changes(value=self.refs.rewrite_text(updated.value))
