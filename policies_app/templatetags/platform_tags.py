from django import template

from ..choices import DECISION_TONES, STATUS_TONES

register = template.Library()


@register.filter
def tone(value: str) -> str:
    """The colour of a status or a decision (choices.py holds the one mapping)."""
    return STATUS_TONES.get(value) or DECISION_TONES.get(value) or "neutral"
