"""A Griffe extension for the API reference (mkdocs.yml): docstrings read as reference, not as run-on paragraphs.

Two things, both from the sources as they are (allow_inspection is off: nothing is imported):
- aligned blocks of a docstring ("name   what it is" lines, two or more spaces between the columns, continuation
  lines indented under the second column) become Markdown bullet lists, where Markdown would have run them into
  one sentence;
- a configuration dataclass whose fields are declared with `hyperparameter(default, label, help, ...)` or
  `_setting(default, help, ...)` gets a table of its fields: default, range and help, from the same metadata the
  sliders and the command line use.
"""

from __future__ import annotations

import ast
import re

import griffe

_ROW = re.compile(r"^(?P<indent> {0,3})(?P<name>\S(?:\S| (?! ))*?) {2,}(?P<text>\S.*)$")


def _convert_block(rows: list[tuple[str, str]]) -> list[str]:
    return [f"- `{name}`: {text}" if " " not in name else f"- **{name}**: {text}" for name, text in rows]


def aligned_blocks_to_lists(text: str) -> str:
    """`text` with each block of two or more aligned rows (and their continuation lines) as a bullet list."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        rows: list[tuple[str, str]] = []
        j = i
        column = None
        while j < len(lines):
            match = _ROW.match(lines[j])
            if match and (column is None or len(match.group("indent")) == column[0]):
                start = len(lines[j]) - len(match.group("text"))
                column = (len(match.group("indent")), start)
                rows.append((match.group("name"), match.group("text").strip()))
                j += 1
                continue
            stripped = lines[j].strip()
            if rows and stripped and column is not None and len(lines[j]) - len(lines[j].lstrip()) >= column[1] - 2:
                rows[-1] = (rows[-1][0], rows[-1][1] + " " + stripped)  # a continuation of the row above
                j += 1
                continue
            break
        if len(rows) >= 2:
            if out and out[-1].strip():
                out.append("")  # a list starts a block of its own
            out.extend(_convert_block(rows))
            if j < len(lines) and lines[j].strip():
                out.append("")
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _literal(node: ast.expr | None) -> str:
    if node is None:
        return ""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)
    return repr(value) if isinstance(value, str) else str(value)


def field_row(name: str, value: str) -> tuple[str, str, str, str] | None:
    """(name, default, range, help) of a field declared `hyperparameter(...)` or `_setting(...)`, else None."""
    try:
        call = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return None
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if call.func.id == "hyperparameter" and len(call.args) >= 3:
        default, label, help_text = call.args[:3]
        low, high, unit = (_literal(keywords.get(key)) for key in ("low", "high", "unit"))
        bounds = f"{low or '…'} to {high or '…'}" if (low or high) else ""
        described = f"{ast.literal_eval(label)}: {ast.literal_eval(help_text)}" + (f" ({ast.literal_eval(unit)})" if unit else "")
        return name, _literal(default), bounds, described
    if call.func.id == "_setting" and len(call.args) >= 2:
        default, help_node = call.args[:2]
        try:
            help_text = ast.literal_eval(help_node)
        except ValueError:
            help_text = ast.unparse(help_node)
        shown = "the environment family's" if _literal(default) == "FAMILY_DEFAULT" else _literal(default)
        return name, shown, "", help_text
    return None


class ReferenceTables(griffe.Extension):
    """Aligned docstring blocks as lists; field tables for configuration dataclasses."""

    def on_object(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = aligned_blocks_to_lists(obj.docstring.value)
        if not obj.is_class:
            return
        rows = []
        for member in obj.members.values():
            if member.is_attribute and getattr(member, "value", None) is not None:
                row = field_row(member.name, str(member.value))
                if row is not None:
                    rows.append(row)
        if rows and obj.docstring is not None:
            table = ["", "| field | default | range | what it is |", "|---|---|---|---|"]
            table += [f"| `{n}` | `{d}` | {r} | {h.replace('|', '/')} |" for n, d, r, h in rows]
            obj.docstring.value += "\n" + "\n".join(table)
