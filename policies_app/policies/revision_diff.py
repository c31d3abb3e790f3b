"""Two revisions side by side: each module (and the data and settings) line by line, with the
unchanged stretches between changes folded away."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field

from policies_app.policies.content import PolicyContent

CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffRow:
    kind: str  # equal | changed | removed | added | gap (folded unchanged lines)
    left_number: int | None = None
    left: str = ""
    right_number: int | None = None
    right: str = ""


@dataclass
class FileDiff:
    filename: str
    status: str  # unchanged | changed | added | removed
    rows: list[DiffRow] = field(default_factory=list)


def _files(content: PolicyContent) -> dict[str, str]:
    files = dict(content.modules)
    files["(settings)"] = f"rego_version = {content.rego_version}\nenforcement = {content.enforcement}\n"
    if content.data is not None:
        files["(data)"] = json.dumps(content.data, indent=2, sort_keys=True) + "\n"
    return files


def diff_contents(old: PolicyContent, new: PolicyContent) -> list[FileDiff]:
    """Every file of either revision, changed ones first, in name order."""
    before, after = _files(old), _files(new)
    diffs = []
    for name in sorted(set(before) | set(after)):
        left, right = before.get(name), after.get(name)
        if left == right:
            diffs.append(FileDiff(name, "unchanged"))
            continue
        status = "added" if left is None else "removed" if right is None else "changed"
        diffs.append(FileDiff(name, status, _rows((left or "").splitlines(), (right or "").splitlines())))
    return sorted(diffs, key=lambda diff: (diff.status == "unchanged", diff.filename))


def _rows(left: list[str], right: list[str]) -> list[DiffRow]:
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for index, group in enumerate(matcher.get_grouped_opcodes(CONTEXT_LINES)):
        if index or group[0][1] > 0:
            rows.append(DiffRow("gap"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(
                    DiffRow("equal", i + 1, left[i], j + 1, right[j])
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                )
                continue
            paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for offset in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + offset, j1 + offset
                has_left, has_right = i < i2, j < j2
                kind = "changed" if offset < paired else "removed" if has_left else "added"
                rows.append(
                    DiffRow(
                        kind,
                        i + 1 if has_left else None,
                        left[i] if has_left else "",
                        j + 1 if has_right else None,
                        right[j] if has_right else "",
                    )
                )
    last = rows[-1] if rows else None
    if last is not None and ((last.left_number or 0) < len(left) or (last.right_number or 0) < len(right)):
        rows.append(DiffRow("gap"))
    return rows
