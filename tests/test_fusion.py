"""Tests of the pure score-fusion functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import ranking, ranks, rrf_fuse, tune_weight, zscore, zscore_fuse


class TestZscore:
    def test_standardises(self):
        z = zscore(np.array([1.0, 2.0, 3.0]))
        assert z.mean() == pytest.approx(0.0)
        assert z.std() == pytest.approx(1.0)

    @pytest.mark.parametrize("const", [0.0, 5.0, -3.25])
    def test_constant_gives_zeros(self, const):
        assert np.array_equal(zscore(np.full(4, const)), np.zeros(4))

    @pytest.mark.parametrize("value", [209716.12649394, 1e6 / 3, -98765.4321, 1e15 + 0.1])
    def test_large_constant_gives_zeros_not_rounding_noise(self, value):
        # mean() of identical large floats is off by an ulp, so std() is tiny but not 0
        assert np.array_equal(zscore(np.full(5, value)), np.zeros(5))

    def test_empty(self):
        assert zscore(np.array([])).shape == (0,)

    def test_single_value_gives_zero(self):
        assert zscore(np.array([7.0])).tolist() == [0.0]

    def test_accepts_lists_and_ints(self):
        assert zscore([1, 3]).tolist() == pytest.approx([-1.0, 1.0])

    @settings(max_examples=60, deadline=None)
    @given(
        arrays(
            np.float64,
            st.integers(2, 40),
            elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        )
    )
    def test_mean_zero_and_order_preserving(self, x):
        z = zscore(x)
        assert z.shape == x.shape
        assert abs(z.mean()) < 1e-6
        if np.allclose(z, 0.0):
            return
        # strictly larger inputs never get smaller outputs
        i, j = np.meshgrid(np.arange(len(x)), np.arange(len(x)), indexing="ij")
        bigger = x[i] > x[j]
        assert np.all(z[i][bigger] >= z[j][bigger])
        assert z.std() == pytest.approx(1.0, rel=1e-6)


class TestFuse:
    def test_zscore_fuse_shape_and_value(self):
        d, lx = np.array([0.9, 0.1, 0.5]), np.array([0.0, 3.0, 1.0])
        fused = zscore_fuse([d, lx], [1.0, 0.5])
        assert fused.shape == (3,)
        assert fused == pytest.approx(zscore(d) + 0.5 * zscore(lx))

    def test_zscore_fuse_zero_weight_ignores_side(self):
        d, lx = np.array([0.9, 0.1, 0.5]), np.array([0.0, 3.0, 1.0])
        assert zscore_fuse([d, lx], [1.0, 0.0]) == pytest.approx(zscore(d))

    def test_zscore_fuse_empty(self):
        assert zscore_fuse([], []).shape == (0,)

    def test_rrf_fuse_values(self):
        a, b = np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0])
        fused = rrf_fuse([a, b], k=60)
        expected = np.array([1 / 61 + 1 / 63, 2 / 62, 1 / 63 + 1 / 61])
        assert fused == pytest.approx(expected)

    def test_rrf_fuse_weights(self):
        a, b = np.array([3.0, 2.0]), np.array([2.0, 3.0])
        fused = rrf_fuse([a, b], [1.0, 2.0], k=1)
        assert fused == pytest.approx([1 / 2 + 2 / 3, 1 / 3 + 2 / 2])

    def test_rrf_fuse_empty(self):
        assert rrf_fuse([]).shape == (0,)

    @pytest.mark.parametrize("fuse", [zscore_fuse, rrf_fuse])
    def test_misaligned_arrays_raise(self, fuse):
        with pytest.raises(InvalidInputError, match="aligned"):
            fuse([np.zeros(3), np.zeros(4)], [1.0, 1.0])

    @pytest.mark.parametrize("fuse", [zscore_fuse, rrf_fuse])
    def test_weight_count_mismatch_raises(self, fuse):
        with pytest.raises(InvalidInputError, match="weight"):
            fuse([np.zeros(3), np.zeros(3)], [1.0])

    def test_errors_are_value_errors(self):
        with pytest.raises(ValueError):
            zscore_fuse([np.zeros(2), np.zeros(3)], [1.0, 1.0])


class TestRanks:
    def test_ranking_best_first(self):
        assert ranking(np.array([0.1, 0.9, 0.5])).tolist() == [1, 2, 0]

    def test_ranking_ties_keep_order(self):
        assert ranking(np.array([1.0, 2.0, 1.0, 2.0, 1.0])).tolist() == [1, 3, 0, 2, 4]

    def test_ranks_are_one_based_inverse_of_ranking(self):
        s = np.array([0.3, 0.3, 0.9, 0.1])
        r = ranks(s)
        assert r.tolist() == [2, 3, 1, 4]
        assert np.array_equal(np.argsort(r), ranking(s))

    def test_ranks_empty(self):
        assert ranks(np.array([])).shape == (0,)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(-3, 3), min_size=1, max_size=30))
    def test_ranks_are_a_permutation(self, xs):
        r = ranks(np.array(xs, dtype=float))
        assert sorted(r.tolist()) == list(range(1, len(xs) + 1))


class TestTuneWeight:
    @staticmethod
    def queries(informative: bool, n: int = 20, pool: int = 15, seed: int = 0):
        rng = np.random.default_rng(seed)
        dense, lexical, gold = [], [], []
        for _ in range(n):
            g = np.zeros(pool, dtype=bool)
            g[rng.integers(pool)] = True
            d = rng.normal(size=pool)
            d[g] += 0.5  # dense is weakly informative
            lx = rng.normal(size=pool)
            if informative:
                lx[g] += 4.0  # lexical nails the gold turn
            dense.append(d)
            lexical.append(lx)
            gold.append(g)
        return dense, lexical, gold

    def test_picks_positive_weight_when_lexical_helps(self):
        dense, lexical, gold = self.queries(informative=True)
        w, mrr = tune_weight(dense, lexical, gold)
        w0, mrr0 = tune_weight(dense, lexical, gold, grid=[0.0])
        assert w > 0.5
        assert mrr > mrr0 + 0.2
        assert 0.0 < mrr <= 1.0

    def test_prefers_small_weight_when_lexical_is_noise(self):
        dense, lexical, gold = self.queries(informative=False, seed=3)
        dense = [d + 10.0 * g for d, g in zip(dense, gold, strict=True)]  # dense is perfect
        w, mrr = tune_weight(dense, lexical, gold)
        assert mrr == pytest.approx(1.0)
        assert w == 0.0  # ties go to the smaller weight

    def test_mrr_by_hand(self):
        dense = [np.array([1.0, 0.0, 0.5])]
        lexical = [np.array([0.0, 0.0, 0.0])]
        gold = [np.array([False, False, True])]
        assert tune_weight(dense, lexical, gold, grid=[0.0]) == (0.0, pytest.approx(0.5))

    def test_query_without_gold_counts_as_zero(self):
        dense = [np.array([1.0, 0.0]), np.array([1.0, 0.0])]
        lexical = [np.zeros(2), np.zeros(2)]
        gold = [np.array([True, False]), np.array([False, False])]
        assert tune_weight(dense, lexical, gold, grid=[0.0])[1] == pytest.approx(0.5)

    @pytest.mark.parametrize(
        "args",
        [([], [], []), ([np.zeros(2)], [], [np.zeros(2, bool)]), ([np.zeros(2)], [np.zeros(2)], [])],
    )
    def test_bad_inputs_raise(self, args):
        with pytest.raises(InvalidInputError):
            tune_weight(*args)
