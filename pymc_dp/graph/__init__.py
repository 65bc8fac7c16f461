"""Reading a PyMC model's graph: which arrays a variable reads, and how.

Pure inspection, below every recogniser: :mod:`~pymc_dp.graph.reading` (distributions, data
values, the as-is rule for records, indexing, readers) and :mod:`~pymc_dp.graph.cells` (a
parameter read per cell of private group labels and binned covariates). The recogniser
(:mod:`pymc_dp.analysis`) and the families' own recognition (:mod:`pymc_dp.families`) use
them; nothing here imports either, and nothing here releases anything.
"""
