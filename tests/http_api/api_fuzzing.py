"""A property-based run over every operation of the API's OpenAPI schema, with Schemathesis: requests that
fit the schema and requests that do not, on random ids and on ids of objects that exist. Whatever the
request, the answer must not be a server error (issue 6: bad input gets a 400 naming the field).

Used by tests/http_api/test_schemathesis.py (bounded, in the suite) and bench/bench_schemathesis.py (long, against
gunicorn)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode

# The resource of each path, to point {id} at objects that exist.
RESOURCES = ("projects", "templates", "environments", "policies", "teams", "deployments")


@dataclass
class ServerError:
    operation: str
    status: int
    body: str
    reproduce: str


@dataclass
class Report:
    calls: int = 0
    statuses: Counter = field(default_factory=Counter)
    server_errors: list[ServerError] = field(default_factory=list)

    def summary(self) -> str:
        classes = Counter(f"{status // 100}xx" for status in self.statuses.elements())
        return f"{self.calls} requests: " + ", ".join(
            f"{count} {name}" for name, count in sorted(classes.items())
        )


def strategy_for(operation: Any, known_ids: dict[str, list[int]]) -> st.SearchStrategy:
    """Valid and invalid requests; where the path has an {id}, half of them aim at an existing object."""
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    resource = operation.path.strip("/").split("/")[2] if operation.path.count("/") > 3 else ""
    if "{id}" not in operation.path or not known_ids.get(resource):
        return st.one_of([operation.as_strategy(mode) for mode in modes])
    # Most requests aim at objects that exist: a random id only ever reaches the 404 of the lookup.
    existing = [
        operation.as_strategy(mode, path_parameters={"id": pk})
        for pk in known_ids[resource]
        for mode in modes
    ]
    return st.one_of([operation.as_strategy(GenerationMode.POSITIVE), *existing * 3])


def fuzz(
    schema: Any,
    call: Callable[[Any], Any],
    *,
    examples: int,
    known_ids: dict[str, list[int]],
    seed: int | None = 0,
    operations: Callable[[str], bool] = lambda label: True,
) -> Report:
    """Send ``examples`` requests per operation through ``call(case) -> response``; record 5xx answers.

    ``seed`` makes the run the same every time (the suite); None draws new requests (the bench)."""
    report = Report()
    settings = hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is not None,
        phases=[Phase.explicit, Phase.generate],  # every request once: a 5xx is recorded, not shrunk
        suppress_health_check=list(HealthCheck),
    )
    for result in schema.get_all_operations():
        operation = result.ok()
        if not operations(operation.label):
            continue

        @settings
        @given(case=strategy_for(operation, known_ids))
        def send(case: Any) -> None:
            response = call(case)
            report.calls += 1
            report.statuses[response.status_code] += 1
            if response.status_code >= 500:
                report.server_errors.append(
                    ServerError(
                        case.operation.label,
                        response.status_code,
                        response.text[:500],
                        case.as_curl_command(),
                    )
                )

        send()
    return report
