"""Runs without torch: the exporter's op list claims only kernels that the
runtime registers."""
import unittest

from torch_export import supported


class Supported(unittest.TestCase):
    def test_every_supported_op_has_a_runtime_kernel(self):
        reg = supported.registry_ops(supported.default_registry_path())
        self.assertGreater(len(reg), 20, "could not read runtime/kernel_registry.c")
        missing = sorted(supported.SUPPORTED_OPS - reg)
        self.assertEqual(missing, [], f"no kernel registered for {missing}")

    def test_view_and_compute_ops_are_supported(self):
        self.assertLessEqual(supported.VIEW_OPS, supported.SUPPORTED_OPS)
        self.assertLessEqual(supported.COMPUTE_OPS, supported.SUPPORTED_OPS)
