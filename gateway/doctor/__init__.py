"""``chrome-ssh-gateway doctor``: each target checked step by step, with a fix per failure.

``checks`` runs the steps (``ssh_steps``, ``browser_steps``, over ``probes``),
``fixes`` words what to do about a failed one, ``report`` holds the result and
renders it as text or JSON.
"""

from gateway.doctor.checks import check_target, run_doctor, select_targets
from gateway.doctor.report import STEPS, Report, Step, TargetReport, render_text

__all__ = [
    "STEPS",
    "Report",
    "Step",
    "TargetReport",
    "check_target",
    "render_text",
    "run_doctor",
    "select_targets",
]
