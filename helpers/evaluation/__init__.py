"""The evaluation: validating a turn against its case, running cases per strategy, pricing, the scaling run and the comparison report."""
