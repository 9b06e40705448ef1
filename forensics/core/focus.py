"""The ``--focus`` regex (or an inventory's ``focus:``), checked once for both."""

from __future__ import annotations

import re
import warnings


def focus_problem(focus: str) -> str | None:
    """Why ``focus`` is not a usable regular expression, or None.

    >>> focus_problem("cuzk|lotus-worker") is None
    True
    >>> focus_problem("cuzk(")
    'not a valid regular expression: missing ), unterminated subpattern at position 4'
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a FutureWarning is not the operator's problem
            re.compile(focus)
    except re.error as error:
        return f"not a valid regular expression: {error}"
    return None
