"""Names and other one-line values hold no control characters.

A name travels into places that read lines: email subjects (a newline there is a header injection, and
Django refuses the whole message with BadHeaderError), chat messages, CSV exports, logs, terminals. So
every single-line text field (a ``CharField``: names, URLs, paths, revisions, idempotency keys) of the
platform's models and of the user model refuses, when saved, control characters (line breaks, tabs,
escapes), Unicode line and paragraph separators, and the bidirectional overrides that make a name read
differently from what it is. The refusal is ``Invalid`` naming the field, which the API answers with 400
and the pages show beside the form. Multi-line text (descriptions, policy sources, comments) is a
``TextField`` and is left alone.

The rule sits on saving (a ``pre_save`` receiver) so that every way in (API, pages, commands, the Django
admin) meets it without repeating it; ``one_line`` makes a line of text for output built from values
stored before the rule existed.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models
from django.db.models.signals import pre_save

from policies_app.errors import Invalid

# Bidirectional embeddings, overrides and isolates (the "Trojan Source" characters), and the marks.
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
# The log records what happened, whatever names held then; its own text is made one line by audit.py.
_EXEMPT_MODELS = frozenset({"policies_app.auditentry"})


def first_refused_character(value: str) -> str | None:
    for character in value:
        if character in _BIDI_CONTROLS or unicodedata.category(character) in _REFUSED_CATEGORIES:
            return character
    return None


def refusal_of_line(value: Any) -> str | None:
    """Why ``value`` may not be stored as a one-line value (None: it may)."""
    if not isinstance(value, str):
        return None
    character = first_refused_character(value)
    if character is None:
        return None
    return (
        f"Must be a single line without control characters (found U+{ord(character):04X}): "
        "no line breaks, tabs or direction overrides."
    )


_ANY_REFUSED = re.compile(
    "[" + "".join(re.escape(c) for c in sorted(_BIDI_CONTROLS)) + r"\x00-\x1f\x7f-\x9f\u2028\u2029]+"
)


def one_line(text: str) -> str:
    """``text`` with every run of refused characters made one space: safe for a header or a cell."""
    return _ANY_REFUSED.sub(" ", text)


@cache
def _one_line_fields(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(
        field.attname for field in model._meta.concrete_fields if isinstance(field, models.CharField)
    )


def _applies_to(model: type[models.Model]) -> bool:
    return model._meta.label_lower not in _EXEMPT_MODELS and (
        model._meta.app_label == "policies_app" or model is get_user_model()
    )


def require_single_line_fields(
    sender: type[models.Model], instance: models.Model, update_fields: Any = None, **kwargs: Any
) -> None:
    """Refuse to save a model whose single-line fields (those being saved) hold a refused character."""
    if kwargs.get("raw") or not _applies_to(sender):
        return
    errors = {}
    for attname in _one_line_fields(sender):
        if update_fields is not None and attname not in update_fields:
            continue
        refusal = refusal_of_line(getattr(instance, attname, None))
        if refusal is not None:
            errors[attname] = [refusal]
    if errors:
        raise Invalid(errors)


def refuse_control_characters_on_save() -> None:
    pre_save.connect(require_single_line_fields, dispatch_uid="policies_app.single_line_fields")
