"""Analysis: pure functions over the dataset (pandas in, typed results out).

The CLI, the pages, the posts and the diff all read the same numbers from here.
"""

from sparkreport.analysis import design_checks as _design_checks  # noqa: F401  (registers the design checks)
from sparkreport.analysis import physics as _physics  # noqa: F401  (registers the physical checks)
from sparkreport.analysis.arms import arm_stats, included_runs, inclusion_rule_text
from sparkreport.analysis.checks import CHECKS, Finding, check, register_check
from sparkreport.analysis.claims import claim_sentence, errors_for
from sparkreport.analysis.compare import compare
from sparkreport.config import AnalysisOptions

__all__ = [
    "AnalysisOptions", "CHECKS", "Finding", "arm_stats", "check", "claim_sentence", "compare", "errors_for",
    "included_runs", "inclusion_rule_text", "register_check",
]
