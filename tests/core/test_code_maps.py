"""The guard against running out of memory mappings (jaxplace.code_maps)."""

import subprocess
import sys

import pytest

from jaxplace.code_maps import map_count

# In a fresh process, so that clearing JAX's caches does not make the rest of this
# test worker recompile its shared shapes.
SCRIPT = """
import jaxplace as jp
from jaxplace.code_maps import map_count, release_compiled_code
from jaxplace.generators import regal
base = map_count()[0]
for n in (20,):  # the programs of one search
    jp.search(jp.Problem(regal(1, n=n), 3), "brkga", budget=200, progress=False)
grown = map_count()[0]
assert not release_compiled_code(share=1.0), "released below the limit"
assert release_compiled_code(share=0.0), "did not release"
after = map_count()[0]
print(base, grown, after)
assert grown > base + 200, (base, grown)
assert after < grown - 200, (grown, after)
"""


def test_release_compiled_code_frees_the_mappings_of_compiled_programs():
    if map_count() is None:
        pytest.skip("the kernel does not report memory mappings here (not Linux)")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_map_count_is_below_its_limit():
    counts = map_count()
    if counts is None:
        pytest.skip("not Linux")
    used, limit = counts
    assert 0 < used < limit
