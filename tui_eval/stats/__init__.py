"""Statistics as plain functions of counts and scores: proportions, pass@k and Fisher
(`proportions`), judge–human agreement (`agreement`), the exact group-sequential test
(`group_sequential`), one case's two-sample test (`two_sample`) and run-until-decided
(`case_decisions`). Imports only `numpy` and the standard library: a bottom layer.
"""
