"""experiments.bench.gmm_k_range (`acl gmm-k-range`): the refits reproduce the run's own
fits, and the comparison of mixtures padded to different k_max."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from acl.teachers.gmm import GMM
from experiments.bench import gmm_k_range
from tests.conftest import TINY


def padded(weights, k_max):
    """A 1-fit, 1-seed GMM of len(weights) active 2-D components, padded to k_max."""
    k = len(weights)
    w = np.zeros((1, 1, k_max), np.float32)
    w[0, 0, :k] = weights
    means = np.zeros((1, 1, k_max, 2), np.float32)
    means[0, 0, :k] = np.arange(2 * k, dtype=np.float32).reshape(k, 2)
    covs = np.broadcast_to(np.eye(2, dtype=np.float32), (1, 1, k_max, 2, 2)).copy()
    return GMM(w, means, covs)


def test_same_mixture_across_paddings():
    three = padded([0.2, 0.3, 0.5], 9)
    assert gmm_k_range.same_mixture(three, padded([0.2, 0.3, 0.5], 5)).all()
    assert gmm_k_range.same_mixture(padded([0.2, 0.3, 0.5], 5), three).all()
    # A fourth component, or one weight moved, is another mixture.
    assert not gmm_k_range.same_mixture(three, padded([0.2, 0.3, 0.4, 0.1], 5)).any()
    assert not gmm_k_range.same_mixture(three, padded([0.2, 0.31, 0.49], 5)).any()
    moved = padded([0.2, 0.3, 0.5], 5)
    moved.means[0, 0, 1, 0] += 1e-3
    assert not gmm_k_range.same_mixture(three, moved).any()


@pytest.mark.slow  # a tiny training run and two refit programs: about 40 s on 2 cores
def test_refits_reproduce_the_run(tmp_path):
    config = tmp_path / "tiny.yaml"
    teacher = {"name": "alp_gmm", "fit_every": 4, "k_max": 4}
    config.write_text(yaml.safe_dump({**TINY, "teacher": teacher}))
    out = tmp_path / "k_range.json"
    code = gmm_k_range.main(["--config", str(config), "--k-max", "4", "2", "--out", str(out)])
    assert code == 0
    document = json.loads(out.read_text())
    assert document["fits"] == 3  # 12 iterations, a fit every 4
    own, narrow = document["results"]["4"], document["results"]["2"]
    # Every fit of the run is reproduced, bit for bit.
    assert own["matches_run"] == 1.0 and own["same_as_first"] == 1.0
    fits = 3 * TINY["num_seeds"]
    assert sum(own["chosen_k_counts"].values()) == fits
    assert narrow["chosen_k_counts"] == {"2": fits, "3": 0, "4": 0}
    # A k's fit does not depend on the range around it (its key and init are its own), so
    # the narrow range agrees exactly where the full one chose k = 2, and nowhere else.
    assert narrow["same_as_first"] == own["chosen_k_counts"]["2"] / fits
