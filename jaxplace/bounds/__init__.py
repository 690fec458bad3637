"""Lower bounds and certificates on HiGHS (../shared/docs/mtpp.md section 3).

    import jaxplace as jp
    cert = jp.certify(problem, partition, methods=("simple", "bottleneck-guess", "exact"))
    cert.lower_bound, cert.upper_bound, cert.ratio, cert.optimal
"""

from jaxplace.bounds.bottleneck import bottleneck_bound, bottleneck_model
from jaxplace.bounds.certificate import (
    DEFAULT_METHODS,
    METHODS,
    Certificate,
    MethodResult,
    certify,
    sample_partition,
)
from jaxplace.bounds.exact import exact_bound, exact_model
from jaxplace.bounds.guess import guess_bound, guess_model

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "Certificate",
    "MethodResult",
    "bottleneck_bound",
    "bottleneck_model",
    "certify",
    "exact_bound",
    "exact_model",
    "guess_bound",
    "guess_model",
    "sample_partition",
]
