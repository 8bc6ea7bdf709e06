"""YAML from files a user did not necessarily write: PyYAML's safe loader, refusing alias bombs
(a few hundred bytes of nested anchors describe millions of values). Once composed, before
anything is built, a document's expanded size is checked with go-yaml's rule: up to 400,000
values anything goes; beyond, the share from aliases must fall from 99% to 10% at 4,000,000.
Recursive aliases are refused too.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, SequenceNode

from tui_eval.util.errors import TuiEvalError

FREE_VALUES = 400_000
"""Documents expanding to at most this many values load whatever their aliases."""
CAPPED_VALUES = 4_000_000
"""From this many values on, at most 10% of them may come from aliases."""


class AliasExpansionError(TuiEvalError, ComposerError):
    """Aliases expanding a document far beyond its size (or into itself); a YAML error."""


class SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader if PyYAML has it (about 5x faster), refusing alias bombs."""

    def get_single_node(self) -> Node | None:
        node: Node | None = super().get_single_node()
        if node is not None:
            check_expansion(node)
        return node


def load_yaml(text: str) -> Any:
    """`text` as plain data (the safe loader's types), alias bombs refused.

    Raises:
        yaml.YAMLError: not YAML, or an `AliasExpansionError`.
    """
    return yaml.load(text, Loader=SafeLoader)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_expansion(root: Node) -> None:
    """Refuse `root` when its aliases expand it too far (see the module's docstring).

    Raises:
        AliasExpansionError: naming the line of the repeated anchor that crosses the bound.
    """
    sizes: dict[int, int] = {}  # expanded values under each node, itself included
    references: dict[int, int] = {}  # how many parents hold each node
    distinct = 0
    state: dict[int, bool] = {}  # False while a node's children are being sized
    stack: list[tuple[Node, bool]] = [(root, False)]
    references[id(root)] = 1
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            state[key] = True
            continue
        if key in state:
            if not state[key]:
                raise AliasExpansionError(
                    None, None, "a YAML alias holds itself (a recursive anchor)", node.start_mark
                )
            continue
        state[key] = False
        distinct += 1
        stack.append((node, True))
        for child in _children(node):
            references[id(child)] = references.get(id(child), 0) + 1
            child_state = state.get(id(child))
            if child_state is False:
                raise AliasExpansionError(
                    None, None, "a YAML alias holds itself (a recursive anchor)", child.start_mark
                )
            if child_state is None:
                stack.append((child, False))
    total = sizes[id(root)]
    if total <= FREE_VALUES:
        return
    span = (total - FREE_VALUES) / (CAPPED_VALUES - FREE_VALUES)
    allowed_share = 0.99 - 0.89 * min(1.0, span)
    if (total - distinct) / total <= allowed_share:
        return
    place = _crossing_anchor(root, sizes, references)
    raise AliasExpansionError(
        None,
        None,
        f"YAML aliases expand the document to {total:,} values from {distinct:,} written "
        "(an alias bomb?); write the repeated values out, or repeat anchors less deeply",
        place.start_mark,
    )


def _crossing_anchor(root: Node, sizes: dict[int, int], references: dict[int, int]) -> Node:
    """The outermost repeated node on the way to where the expansion crosses `FREE_VALUES`."""
    remaining = FREE_VALUES
    node = root
    while True:
        if references.get(id(node), 0) > 1:
            return node
        remaining -= 1
        for child in _children(node):
            if sizes[id(child)] <= remaining:
                remaining -= sizes[id(child)]
                continue
            node = child
            break
        else:
            return node
