"""Request parsing with the platform's JSON limits (json_limits.py): a bad document is a 400 naming its
field, never a 500 from deep recursion, a NUL the database refuses, or an infinite number."""

from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from policies_app.guards import json_limits


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            text = stream.read().decode(encoding)
        except UnicodeDecodeError as problem:
            raise ParseError(f"JSON parse error - {problem}") from None
        try:
            return json_limits.loads(text)
        except json_limits.JSONDocumentError as problem:
            if problem.field:
                raise ValidationError({problem.field: [str(problem)]}) from None
            raise ParseError(f"JSON parse error - {problem}") from None
        except ValueError as problem:
            raise ParseError(f"JSON parse error - {problem}") from None
