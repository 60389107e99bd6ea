"""acl.run.results.mean_se and mean_se_by_step: the one mean ± SE of tables, summaries and plots."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acl.run.results import mean_se, mean_se_by_step


def test_mean_se_over_all_values_gives_floats():
    values = [1.0, 2.0, 4.0, 7.0]
    mean, se = mean_se(values)
    assert isinstance(mean, float) and isinstance(se, float)
    assert mean == pytest.approx(3.5)
    assert se == pytest.approx(stats.sem(values))


def test_mean_se_along_an_axis_gives_a_curve():
    rng = np.random.default_rng(0)
    curves = rng.normal(size=(5, 7))  # [S, T]
    mean, se = mean_se(curves, axis=0)
    assert mean.shape == se.shape == (7,)
    np.testing.assert_allclose(mean, curves.mean(0))
    np.testing.assert_allclose(se, stats.sem(curves, axis=0))


def test_mean_se_by_step_matches_pandas_and_skips_missing_values():
    frame = pd.DataFrame(
        {
            "env_steps": [20, 10, 20, 10, 20, 30],
            "x": [1.0, 2.0, 3.0, 6.0, np.nan, 5.0],
        }
    )
    steps, mean, se = mean_se_by_step(frame, "x")
    np.testing.assert_array_equal(steps, [10, 20, 30])
    grouped = frame.groupby("env_steps")["x"]
    np.testing.assert_allclose(mean, grouped.mean().to_numpy())
    expected = np.nan_to_num(grouped.std(ddof=1).to_numpy() / np.sqrt(grouped.count()))
    np.testing.assert_allclose(se, expected)
    assert se[2] == 0.0  # one value at step 30: a band of width 0


def test_one_seed_summary_is_strict_json_and_reads_back_nan(tmp_path):
    from acl.run.results import SUMMARY_KEYS, RunDir

    mean, se = mean_se([42.0])
    summary = dict.fromkeys(SUMMARY_KEYS, 0) | {
        "final_pct_mastered_mean": mean,
        "final_pct_mastered_se": se,
        "final_per_test_task": {"corridor": {"solve_greedy_se": se}},
    }
    run = RunDir(tmp_path)
    run.write_summary(summary)

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    strict = json.loads((tmp_path / "summary.json").read_text(), parse_constant=refuse)
    assert strict["final_pct_mastered_se"] is None
    back = run.read_summary()
    assert math.isnan(back["final_pct_mastered_se"])
    assert math.isnan(back["final_per_test_task"]["corridor"]["solve_greedy_se"])
    assert back["final_pct_mastered_mean"] == 42.0
