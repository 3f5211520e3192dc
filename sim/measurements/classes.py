"""Map each sample to a request class: by its label or its URL, renamed by regex patterns.

`--class PATTERN=NAME` (repeatable): the first pattern that `re.search` finds in the sample's
label (JMeter `label`, Locust `Name`, the access log's request path) or URL (JMeter `URL`, the
request target) names its class; a sample no pattern matches goes to class `other`. Without
patterns the label (or URL) itself is the class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TOTAL = "total"  # the row of all classes together
UNMATCHED = "other"


class ClassPatternError(ValueError):
    """A `--class` option that is not PATTERN=NAME with a valid regular expression."""


@dataclass
class ClassMap:
    by: str = "label"  # "label" or "url"
    patterns: list[tuple[re.Pattern[str], str]] = field(default_factory=list)

    @classmethod
    def parse(cls, by: str, options: tuple[str, ...] | list[str]) -> ClassMap:
        if by not in ("label", "url"):
            raise ClassPatternError(f"--class-by {by!r}: expected label or url")
        patterns = []
        for option in options:
            pattern, sep, name = option.rpartition("=")
            if not sep or not pattern or not name.strip():
                raise ClassPatternError(
                    f"--class {option!r}: expected PATTERN=NAME, e.g. --class '^/search=search'"
                )
            if name.strip() == TOTAL:
                raise ClassPatternError(
                    f"--class {option!r}: {TOTAL!r} is the row of all classes together; "
                    "choose another class name"
                )
            try:
                patterns.append((re.compile(pattern), name.strip()))
            except re.error as exc:
                raise ClassPatternError(
                    f"--class {option!r}: {pattern!r} is not a regular expression ({exc})"
                ) from None
        return cls(by, patterns)

    def name(self, key: str) -> str:
        """The class of a sample whose label (or URL) is `key`."""
        if not self.patterns:
            return key if key != TOTAL else f"{TOTAL} (label)"
        for pattern, name in self.patterns:
            if pattern.search(key):
                return name
        return UNMATCHED
