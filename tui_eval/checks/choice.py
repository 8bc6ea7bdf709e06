"""`choice`: a multiple-choice answer, read as Inspect's `choice()` scorer reads it (so an
imported Inspect dataset keeps its verdicts): the last line starting `ANSWER:` (else the last
`ANSWER:` anywhere) gives the letters (`B`, `B, C`, `B C`, `BC`, `B and C`), which must be
exactly the expected ones (case and a trailing `.` ignored)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import pydantic

from tui_eval.agents.messages import RunResult
from tui_eval.checks.base import CheckResult, Declared, fail, ok
from tui_eval.util.text import one_line, value_text

_ANSWER_LINE = re.compile(r"(?i)^ANSWER\s*:\s*([A-Za-z\d ,]+)\s*(?:$|\n|\.)", re.MULTILINE)
_ANSWER_ANYWHERE = re.compile(r"(?i)ANSWER\s*:\s*([A-Za-z\d ,]+)(?:[^\w]|\n|$|\.)")


def choice_letter(index: int) -> str:
    """The label of the choice at `index` (0-based): `A`…`Z`, then `1`, `2`, …"""
    return chr(ord("A") + index) if index < 26 else str(index - 25)


class choice:
    """The reply selects exactly the expected choice(s) on its `ANSWER:` line.

    Example:
        >>> choice(["B", "C"], options=4)  # several correct: "ANSWER: B, C" passes

    Args:
        answer: the correct choice's letter, or a list of them when several are correct.
        options: how many choices the question offers.
        multiple: whether the reply may select several (default: when `answer` has several).
    """

    def __init__(
        self,
        answer: Annotated[str | Sequence[str], Declared("str | list[str]")],
        options: Annotated[int, pydantic.Field(ge=1)],
        *,
        multiple: bool | None = None,
        name: str = "choice",
    ) -> None:
        written = [answer] if isinstance(answer, str) else list(answer)
        letters = [c.upper() for part in written for c in str(part) if c not in ", "]
        if options < 1:
            raise ValueError(f"choice needs at least one option, got {options}")
        self.labels = [choice_letter(i) for i in range(options)]
        unknown = [letter for letter in letters if letter not in self.labels]
        if unknown or not letters:
            raise ValueError(
                f"choice answer {', '.join(unknown) or '(none)'} is not one of the "
                f"{options} choices ({', '.join(self.labels)})"
            )
        self.answer = answer
        self.expected = set(letters)
        self.options = options
        self.multiple = len(self.expected) > 1 if multiple is None else multiple
        self.name = name

    def __repr__(self) -> str:
        return f"choice({self.answer!r}, options={self.options})"

    def selected(self, text: str) -> set[str]:
        """The choices a reply selects (empty when it selects none validly)."""
        found = _ANSWER_LINE.findall(text) or _ANSWER_ANYWHERE.findall(text)
        if not found:
            return set()
        written = found[-1].strip().rstrip(".").upper()
        allowed = set(self.labels)
        if self.multiple:
            written = written.replace(" AND ", ",").replace(" ", "")
            by_comma = {part for part in written.split(",") if part}
            if by_comma <= allowed:
                return by_comma
            by_letter = set(written)
            return by_letter if by_letter <= allowed else set()
        tokens = [part for part in written.split(",") if part]
        return {tokens[0]} if len(tokens) == 1 and tokens[0] in allowed else set()

    def __call__(self, run: RunResult) -> CheckResult:
        text = value_text(run.output)
        selected = self.selected(text)
        expected = ", ".join(sorted(self.expected))
        if selected == self.expected:
            return ok(self.name)
        if selected:
            reason = f"answered {', '.join(sorted(selected))}, expected {expected}"
        else:
            form = "<letters>" if self.multiple else "<letter>"
            reason = (
                f"no `ANSWER: {form}` line naming "
                f"{'some' if self.multiple else 'one'} of {', '.join(self.labels)} "
                f"in {one_line(text, 80)!r}; expected {expected}"
            )
        return fail(self.name, reason)
