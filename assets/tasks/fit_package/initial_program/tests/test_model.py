"""Run with `python -m unittest` in the package's folder."""

import math
import unittest

from fitpkg import predict
from fitpkg.features import features
from fitpkg.model import WEIGHTS


class ModelTest(unittest.TestCase):
    def test_one_weight_per_feature(self):
        self.assertEqual(len(features(0.5)), len(WEIGHTS))

    def test_predictions_are_finite_numbers(self):
        for i in range(61):
            y = predict(-3.0 + 0.1 * i)
            self.assertIsInstance(y, float)
            self.assertTrue(math.isfinite(y))


if __name__ == "__main__":
    unittest.main()
