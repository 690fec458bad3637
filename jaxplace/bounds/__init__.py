"""Lower bounds and certificates on HiGHS (the MIP ladder of Archer et al., ICML 2024).

    import jaxplace as jp
    cert = jp.certify(problem, partition, methods=("simple", "bottleneck-guess", "exact"))
    cert.lower_bound, cert.upper_bound, cert.ratio, cert.optimal

The methods of the ladder are in `registry.BOUNDS` (name -> `base.BoundMethod`); every
one returns a `MethodResult`. Names load on first access, so that importing this
package (as the solve workers do, `python -m jaxplace.bounds.worker`) stays light.
Beside the methods' modules: `simple` (L = max(max work, total work / k)), `station`
(station windows for a guessed bottleneck, SALBP-2 style), `crosscheck` (a
certificate's bounds checked against plans of known cost), `worker` (one HiGHS solve in
a child process, pickles in and out).
"""

from __future__ import annotations

import importlib

#: name -> module that defines it (imported on first access)
_LAZY = {
    "BOUNDS": "jaxplace.bounds.registry",
    "DEFAULT_METHODS": "jaxplace.bounds.registry",
    "METHODS": "jaxplace.bounds.registry",
    "MIP_METHODS": "jaxplace.bounds.registry",
    "choose_methods": "jaxplace.bounds.registry",
    "BoundContext": "jaxplace.bounds.base",
    "BoundMethod": "jaxplace.bounds.base",
    "MethodResult": "jaxplace.bounds.base",
    "Certificate": "jaxplace.bounds.certificate",
    "certify": "jaxplace.bounds.certificate",
    "sample_partition": "jaxplace.bounds.certificate",
    "bottleneck_bound": "jaxplace.bounds.bottleneck",
    "bottleneck_model": "jaxplace.bounds.bottleneck",
    "cover_bound": "jaxplace.bounds.cover",
    "weighted_bottleneck": "jaxplace.bounds.cover",
    "exact_bound": "jaxplace.bounds.exact",
    "exact_model": "jaxplace.bounds.exact",
    "guess_bound": "jaxplace.bounds.bottleneck_guess",
    "guess_model": "jaxplace.bounds.bottleneck_guess",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.bounds' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
