"""A pod's usage series keeps its whole life in bounded memory: halved, then sampled half as often."""

from __future__ import annotations

import itertools

from mpijob.controllers.metrics import series
from mpijob.controllers.metrics.series import Point, UsageHistory


def test_a_long_life_is_thinned_evenly_and_stays_bounded() -> None:
    h = UsageHistory(interval=2.0)
    n = series.MAX_POINTS * 5
    for i in range(n):
        h.add(("ns", "p"), Point(float(i), 1.0, i))
    points = h.series(("ns", "p"))
    assert len(points) < series.MAX_POINTS
    assert points[0].at == 0.0 and points[-1].at >= n - 8  # from the start to (nearly) now
    gaps = {b.at - a.at for a, b in itertools.pairwise(points)}
    assert gaps <= {2.0, 4.0, 8.0}  # evenly thinned, the older part no finer than the newer


def test_ended_pods_are_forgotten_oldest_first_and_gpus_ride_along() -> None:
    h = UsageHistory(interval=2.0)
    for i in range(series.MAX_PODS + 3):
        h.add(("ns", f"p{i}"), Point(1.0, 0.5, 10, 80.0, 1 << 30))
    assert h.series(("ns", "p0")) == [] and h.series(("ns", "p3"))
    assert h.series(("ns", "p3"))[0].as_list() == [1.0, 0.5, 10, 80.0, 1 << 30]
