"""The API throttles keep a count per sixtieth of their window, not a timestamp per request (issue 17: a
busy pipeline user's list of thousands of timestamps was read and written back on every poll), and
still never allow more requests in a window than their rate."""

from django.contrib.auth.models import User
from rest_framework.test import APIRequestFactory

from policies_app.api.authentication import UserRateThrottle


def throttle_at(now: float, rate: str) -> UserRateThrottle:
    throttle = UserRateThrottle()
    throttle.rate = rate
    throttle.num_requests, throttle.duration = throttle.parse_rate(rate)
    throttle.timer = lambda: now  # the clock the rule reads, set for the test
    return throttle


def asking(user_id: int):
    request = APIRequestFactory().get("/api/v1/me/")
    request.user = User(pk=user_id, username=f"throttled-{user_id}")
    return request


def test_no_more_than_the_rate_in_a_window_and_allowed_again_once_it_has_passed():
    request = asking(900_001)
    allowed = [throttle_at(1000.0 + n * 0.1, "5/minute").allow_request(request, None) for n in range(6)]
    assert allowed == [True] * 5 + [False]
    refused = throttle_at(1030.0, "5/minute")
    assert not refused.allow_request(request, None)
    # The first requests' second leaves the window at 1061: then, and not before, one more is allowed.
    assert 30.0 <= refused.wait() <= 31.0
    assert not throttle_at(1060.5, "5/minute").allow_request(request, None)
    assert throttle_at(1061.0, "5/minute").allow_request(request, None)
    throttle_at(0, "5/minute").cache.delete(refused.key)


def test_what_is_stored_stays_small_however_many_requests():
    request = asking(900_002)
    for n in range(3000):
        assert throttle_at(2000.0 + n * 0.01, "6000/minute").allow_request(request, None)
    last = throttle_at(2030.0, "6000/minute")
    assert last.allow_request(request, None)
    stored = last.cache.get(last.key)
    assert len(stored) <= 61 and sum(stored.values()) == 3001
    last.cache.delete(last.key)
