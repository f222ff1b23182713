"""SIT's starting labels: the ils ones are near-optimal, far shorter than a 2-opt polish."""

import numpy as np

from training.sit import label_gap, make_dataset


def test_ils_labels_are_tours_and_shorter_than_two_opt_labels() -> None:
    coords, ils = make_dataset(2, 120, seed=3, init="ils", ils_seconds=0.3)
    same, polished = make_dataset(2, 120, seed=3, init="ri+ls")
    assert np.array_equal(coords, same)
    for tour in ils:
        assert sorted(tour.tolist()) == list(range(120))
    assert label_gap(coords, ils) < label_gap(coords, polished) - 1.0
