"""HCL source text cut into its blocks and attributes, verbatim, for re-assembly elsewhere.

python-hcl2 answers what a file declares; this keeps how it was written, so that an
expression can be copied unchanged into a module that Terraform itself evaluates
(tests/infra/terraform_render.py). It knows what can hide a bracket: quoted strings with
their escapes and `${...}` interpolations, heredocs, and `#`, `//` and `/* */` comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENTIFIER = re.compile(r"[A-Za-z_][\w-]*")
_LABEL = re.compile(r'"([^"\\]*)"')
_HEREDOC = re.compile(r"<<-?([A-Za-z_]\w*)\n")
_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class Item:
    """One entry of a body: an attribute (`kind` "=") or a block (`kind` its type)."""

    kind: str
    name: str  # the attribute's name, or the block's type
    labels: tuple[str, ...]
    text: str  # the attribute's expression, or the block's body between its braces


def _skip(text: str, index: int) -> int:
    """The index after the string, heredoc or comment starting at `index`, else `index`."""
    if text.startswith(("#", "//"), index):
        end = text.find("\n", index)
        return len(text) if end < 0 else end
    if text.startswith("/*", index):
        return text.index("*/", index) + 2
    heredoc = _HEREDOC.match(text, index)
    if heredoc:
        closing = re.compile(rf"^[ \t]*{heredoc.group(1)}[ \t]*$", re.MULTILINE)
        found = closing.search(text, heredoc.end())
        if found is None:
            raise ValueError(f"unterminated heredoc {heredoc.group(1)}")
        return found.end()
    if text[index] == '"':
        return _string_end(text, index + 1)
    return index


def _string_end(text: str, index: int) -> int:
    """The index after the quoted string whose body starts at `index`."""
    while True:
        char = text[index]
        if char == "\\":
            index += 2
        elif char == '"':
            return index + 1
        elif text.startswith(("${", "%{"), index):
            index = _closing(text, index + 1) + 1
        else:
            index += 1


def _closing(text: str, index: int) -> int:
    """The index of the bracket that closes the one at `index`."""
    depth = 0
    while True:
        skipped = _skip(text, index)
        if skipped != index:
            index = skipped
            continue
        char = text[index]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                return index
        index += 1


def _expression_end(text: str, index: int) -> int:
    """Where the expression starting at `index` ends: a newline outside any bracket."""
    while index < len(text):
        skipped = _skip(text, index)
        if skipped != index:
            if text.startswith(("#", "//"), index):
                return skipped  # a comment after the expression ends it too
            index = skipped
            continue
        char = text[index]
        if char in _OPEN:
            index = _closing(text, index) + 1
        elif char == "\n":
            return index
        else:
            index += 1
    return index


def items(body: str) -> list[Item]:
    """The attributes and blocks of a body (a whole file, or a block's text)."""
    found: list[Item] = []
    index = 0
    while index < len(body):
        skipped = _skip(body, index)
        if skipped != index or body[index].isspace():
            index = skipped if skipped != index else index + 1
            continue
        name = _IDENTIFIER.match(body, index)
        if name is None:
            raise ValueError(f"unexpected {body[index : index + 40]!r}")
        index = name.end()
        while body[index] in " \t":
            index += 1
        if body[index] == "=" and body[index + 1] != "=":
            end = _expression_end(body, index + 1)
            expression = body[index + 1 : end].strip()
            found.append(Item("=", name.group(0), (), _without_comment(expression)))
            index = end
            continue
        labels: list[str] = []
        while body[index] != "{":
            label = _LABEL.match(body, index)
            if label:
                labels.append(label.group(1))
                index = label.end()
            elif body[index].isspace():
                index += 1
            else:
                raise ValueError(f"unexpected {body[index : index + 40]!r} in a block header")
        close = _closing(body, index)
        found.append(Item(name.group(0), name.group(0), tuple(labels), body[index + 1 : close]))
        index = close + 1
    return found


def _without_comment(expression: str) -> str:
    """`expression` without a trailing line comment."""
    index = 0
    while index < len(expression):
        if expression.startswith(("#", "//"), index):
            return expression[:index].rstrip()
        skipped = _skip(expression, index)
        if skipped != index:
            index = skipped
        elif expression[index] in _OPEN:
            index = _closing(expression, index) + 1
        else:
            index += 1
    return expression


def attribute(body: str, name: str) -> str | None:
    """The expression of the attribute `name` directly in `body`; None if it has none."""
    for item in items(body):
        if item.kind == "=" and item.name == name:
            return item.text
    return None


def blocks(body: str, kind: str) -> list[Item]:
    """The blocks of type `kind` directly in `body`, in order."""
    return [item for item in items(body) if item.kind == kind]
