"""Datasets bundled with :mod:`pymc_dp`."""

from pymc_dp.datasets.mpls_stops import MPLS_STOPS_CATEGORIES, load_mpls_stops

__all__ = ["MPLS_STOPS_CATEGORIES", "load_mpls_stops"]
