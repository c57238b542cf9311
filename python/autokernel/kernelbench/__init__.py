"""KernelBench through autokernel's judge.

KernelBench (ScalingIntelligence) is a directory of problems, each a Python file with a reference
`class Model`, `get_inputs()` and `get_init_inputs()`; a solution is a file with `class ModelNew`
of the same interface. This package loads such a directory (problems), judges a solution in a
process of its own that the solution's code cannot reach (judge, with the solution running in
solver), finds the problems our operators compute (mapping) and builds a ModelNew from our compiled
kernels (ours). The C++ command `autokernel kernelbench` drives it; `python -m
autokernel.kernelbench --help` lists the entry points.
"""
