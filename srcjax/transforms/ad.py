"""Automatic differentiation as source transformation of ANF programs.

Input: a normalized (ANF) function from :class:`~srcjax.frontend.program.Program`
and the names of the parameters to differentiate. Output: **Python source**
of new functions, which srcjax then reads like user code (so derivatives of
derivatives, ``srcjax.source``, NumPy execution and compilation all just work).

This module is the public facade; the work is split by concern:

- :mod:`.anf`: reading ANF statements (:class:`Op`, :func:`classify`, containers,
  loop sources, the loop pre-passes), parameters as generated code takes them
  (:func:`signature`, :func:`all_params`), ``ADJOINT_IMPORTS`` and the errors;
- :mod:`.templates`: rule templates instantiated as code (``instantiate``);
- :mod:`.activity`: activity analysis (:class:`Activity`) and the data-flow facts
  both modes read;
- :mod:`.forward_ad`: forward mode (:class:`JVP`, helpers' ``_jvp``);
- :mod:`.reverse_ad`: reverse mode (:class:`VJP`, helpers' ``_fwd``/``_bwd`` halves),
  after :mod:`.inline_calls` writes out helper calls inside ``if``s on data;
- :mod:`.derivative_source`: the entry points writing a whole derivative
  (:func:`grad_source`, :func:`vjp_source`, :func:`jvp_source`);
- :mod:`.custom_rules`: calls of ``custom_vjp``/``custom_jvp`` functions in both modes.
"""

from __future__ import annotations

from .activity import Activity
from .anf import ADJOINT_IMPORTS, ComprehensionError, DifferentiationError, Op, all_params, classify, signature
from .derivative_source import grad_source, jvp_source, vjp_source
from .forward_ad import JVP
from .reverse_ad import VJP

__all__ = ["ADJOINT_IMPORTS", "JVP", "VJP", "Activity", "ComprehensionError",
           "DifferentiationError", "Op", "all_params", "classify", "grad_source", "jvp_source", "signature",
           "vjp_source"]
