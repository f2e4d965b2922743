"""The parts of consolidation: a plan of typed changes, and the steps that propose them."""
