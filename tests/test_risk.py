"""CVaR of success over levels, on a hand-made table whose answers are worked out by hand."""

import numpy as np
import pytest

from acl.core.risk import cvar, cvar_curve, plot_cvar_curves

# Ten levels: success on the ranking seed, and on an independent measuring seed.
RANKED = np.array([1.0, 0.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.5, 1.0, 0.5])
MEASURED = np.array([0.9, 0.2, 0.4, 1.0, 0.0, 0.6, 0.8, 0.5, 1.0, 0.3])


def test_cvar_on_a_hand_made_table_with_ties():
    risk = cvar(RANKED, MEASURED, alphas=(0.1, 0.2, 0.3, 0.6, 1.0))
    # alpha 0.1: one level's weight, shared by the two levels ranked 0 (levels 1 and 4).
    assert risk[0.1] == pytest.approx((0.2 + 0.0) / 2)
    # alpha 0.2: exactly the two levels ranked 0.
    assert risk[0.2] == pytest.approx((0.2 + 0.0) / 2)
    # alpha 0.3: both zeros, and one level's weight shared by the four ranked 0.5.
    assert risk[0.3] == pytest.approx((0.2 + 0.0 + (0.4 + 0.6 + 0.5 + 0.3) / 4) / 3)
    # alpha 0.6: the zeros and all four 0.5s.
    assert risk[0.6] == pytest.approx((0.2 + 0.0 + 0.4 + 0.6 + 0.5 + 0.3) / 6)
    assert risk[1.0] == pytest.approx(MEASURED.mean())


def test_a_share_of_a_fraction_of_a_level_weighs_the_boundary_level_partly():
    risk = cvar([0.0, 0.5, 1.0], [0.1, 0.7, 0.9], alphas=(0.5,))
    assert risk[0.5] == pytest.approx((0.1 + 0.5 * 0.7) / 1.5)


def test_ranking_and_measuring_on_the_same_seed_is_refused_unless_asked_for():
    with pytest.raises(ValueError, match="independent seed"):
        cvar(RANKED)
    with pytest.raises(ValueError, match="independent seed"):
        cvar(RANKED, RANKED)
    risk = cvar(RANKED, alphas=(0.2, 1.0), same_seed=True)
    assert risk == {0.2: 0.0, 1.0: pytest.approx(RANKED.mean())}


@pytest.mark.parametrize(
    "ranked, measured, alphas, message",
    [
        ([], None, (0.1,), "shape"),
        ([0.5, np.nan], [0.5, 0.5], (0.1,), "finite"),
        ([0.5, 0.5], [0.5], (0.1,), "differ"),
        ([0.5, 0.5], [0.5, 0.5], (0.0,), "alpha"),
        ([0.5, 0.5], [0.5, 0.5], (1.5,), "alpha"),
    ],
)
def test_bad_input_is_refused(ranked, measured, alphas, message):
    with pytest.raises(ValueError, match=message):
        cvar(ranked, measured, alphas, same_seed=measured is None)


def test_the_curve_rises_to_the_mean_and_plots(tmp_path):
    rng = np.random.default_rng(0)
    ranked, measured = rng.random(1000), rng.random(1000)
    alphas, values = cvar_curve(ranked, measured, num=20)
    assert alphas[-1] == 1.0 and values[-1] == pytest.approx(measured.mean())
    # Independent seeds: the levels ranked worst are no worse when measured again.
    assert abs(values[0] - measured.mean()) < 0.1
    worst_on_own_seed = cvar_curve(ranked, num=20, same_seed=True)[1]
    assert worst_on_own_seed[0] < 0.06
    plot_cvar_curves(
        {"a": (alphas, values), "b": (alphas, np.stack([values, values]))}, tmp_path / "cvar.png"
    )
    assert (tmp_path / "cvar.png").stat().st_size > 0


def test_test_set_cvar_ranks_on_even_attempts_and_measures_on_odd_ones():
    from acl.core.risk import test_set_cvar

    # Four tasks, four attempts each: even attempts (0, 2) rank, odd ones (1, 3) measure.
    success = np.array(
        [
            [0, 1, 0, 1],  # ranked 0.0, measured 1.0
            [1, 0, 1, 0],  # ranked 1.0, measured 0.0
            [1, 1, 0, 1],  # ranked 0.5, measured 1.0
            [1, 0, 1, 1],  # ranked 1.0, measured 0.5
        ]
    )
    result = test_set_cvar(success, alphas=(0.25, 0.5, 1.0))
    # Worst quarter by rank: task 0, measured 1.0; worst half: tasks 0 and 2.
    assert result[0.25] == pytest.approx(1.0)
    assert result[0.5] == pytest.approx(1.0)
    assert result[1.0] == pytest.approx(0.625)
    with pytest.raises(ValueError, match="A >= 2"):
        test_set_cvar(success[:, :1])
