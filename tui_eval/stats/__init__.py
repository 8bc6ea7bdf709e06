"""Statistics, as plain functions of counts and scores: no cases, runs or reports here.

Proportions and their intervals, pass@k and Fisher's exact test (`proportions`); judge–human
agreement (`agreement`); the exact group-sequential test (`group_sequential`) and the
two-sample test of one case built on it (`two_sample`); run-until-decided per case
(`case_decisions`). Imports only `numpy` and the standard library: a bottom layer.
"""
