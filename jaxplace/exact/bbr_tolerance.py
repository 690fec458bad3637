"""The slack of every comparison of BB&R (`bbr_model`, `bbr_cross`) with a guess T.

A block counts as fitting T when it costs at most T (1 + RTOL) + ATOL, so float
rounding never refutes a real partition of cost T (a refuted T is then a lower bound
with margin).
"""

RTOL = 1e-9
ATOL = 1e-12
