"""The suite's shared fixtures are made once per run: the tests that use one run on one xdist
worker (tests/conftest.py, SHARED_FIXTURES), which holds only while xdist's loadgroup sees the
group. A pytest that drops it (9.2 did) fails here instead of making each fixture per worker."""

from __future__ import annotations

import pytest


def test_a_test_of_a_shared_fixture_runs_in_its_group(request, kernel_result) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not an xdist worker of a --dist loadgroup run")
    assert request.node.nodeid.endswith("@kernel_check")
    assert kernel_result.kernel is not None


def test_a_test_of_a_shared_fixture_has_its_setup_time_on_top_of_its_timeout(
    request, kernel_result
) -> None:
    """pytest-timeout counts a fixture's setup against the test that first asks for it: that
    test gets the group's setup allowance on top of the global timeout."""
    from tests.conftest import SHARED_SETUP_S

    mark = request.node.get_closest_marker("timeout")
    assert mark is not None
    base = float(request.config.getini("timeout"))
    assert mark.args[0] == base + SHARED_SETUP_S["kernel_check"]
