"""Hypothesis's defaults for the property tests: no per-example deadline (on two busy cores an
example that overruns 200 ms once and not on its replay is reported as Flaky, a failure that
says nothing of the code) and no example database written into the tree."""

from hypothesis import settings

settings.register_profile("dlpipe", deadline=None, database=None)
settings.load_profile("dlpipe")
