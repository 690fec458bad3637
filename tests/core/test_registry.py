"""jaxplace.registry: the one mechanism behind the objectives, the search methods, the
bound ladder and the CLI's commands."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.registry import Lazy, Registry, RegistryView, load_path


def test_lazy_entries_load_on_first_use_and_are_kept(monkeypatch):
    mod = types.ModuleType("_registry_probe")
    mod.THING = object()
    monkeypatch.setitem(sys.modules, "_registry_probe", mod)
    reg = Registry("thing", {"eager": 1, "lazy": "_registry_probe:THING",
                             "module": "_registry_probe"})
    # listing, counting and membership load nothing
    assert reg.names() == ("eager", "lazy", "module") and len(reg) == 3 and "lazy" in reg
    assert reg.entry("lazy") == Lazy("_registry_probe:THING") and not reg.is_loaded("lazy")
    assert reg["lazy"] is mod.THING and reg.is_loaded("lazy")
    assert reg.entry("lazy") is mod.THING  # kept: the next access imports nothing
    assert reg["module"] is mod  # "module" without ":attr" is the module itself


def test_a_lazy_entry_imports_nothing_until_used():
    """In a fresh process: registering, listing and `in` leave the module unimported."""
    code = ("import sys\nfrom jaxplace.registry import Registry\n"
            "r = Registry('x', {'a': 'wave:open'})\n"
            "print('wave' in sys.modules, list(r), 'a' in r)\n"
            "r['a']\nprint('wave' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split("\n")[:2] == ["False ['a'] True", "True"], out.stderr
    assert load_path("wave:open") is sys.modules["wave"].open


def test_order_first_and_replace():
    reg = Registry("thing", [("a", 1), ("b", 2)])
    reg.register("c", 3)
    reg.register("z", 0, first=True)
    assert list(reg) == ["z", "a", "b", "c"]
    with pytest.raises(JaxplaceError, match="'a' is registered already; pass replace=True"):
        reg.register("a", 10)
    reg.register("a", 10, replace=True)  # takes the old one's place
    assert list(reg.items()) == [("z", 0), ("a", 10), ("b", 2), ("c", 3)]
    reg.register("c", 30, first=True, replace=True)
    assert list(reg) == ["c", "z", "a", "b"]
    reg["b"] = 20  # a dict's assignment replaces, in place
    assert reg["b"] == 20 and list(reg) == ["c", "z", "a", "b"]
    with pytest.raises(JaxplaceError, match="non-empty strings"):
        reg.register("", 1)


def test_unregister():
    reg = Registry("thing", {"a": 1, "b": 2})
    reg.unregister("a")
    reg.unregister("a")  # unknown: nothing happens
    assert list(reg) == ["b"]
    del reg["b"]
    with pytest.raises(KeyError):
        del reg["b"]
    assert len(reg) == 0


def test_unknown_names_say_the_known_ones_and_the_close_ones():
    reg = Registry("search method", {"brkga": 1, "random": 2, "relax": 3,
                                     "mla-weighted": 4}, field="method")
    with pytest.raises(JaxplaceError) as err:
        reg.get("brgka")
    assert err.value.field == "method"
    assert str(err.value) == ("method: unknown search method 'brgka'; choose one of brkga, "
                              "random, relax, mla-weighted; did you mean 'brkga'?")
    with pytest.raises(JaxplaceError, match="choose one of brkga") as err:
        reg.get("zzz")
    assert "did you mean" not in str(err.value)
    with pytest.raises(KeyError):  # a dict's lookup stays a dict's
        reg["brgka"]
    assert reg.get("brgka", None) is None and reg.get("relax") == 3
    assert "BRKGA" not in reg and reg.resolve("BRKGA") is None  # exact unless casefold


def test_casefold_lookup():
    reg = Registry("method", {"CMA_ES": 1, "brkga": 2}, casefold=True)
    assert reg.get("cma_es") == 1 and reg.get(" BRKGA ") == 2
    assert reg.resolve("Cma_Es") == "CMA_ES"
    with pytest.raises(JaxplaceError, match="did you mean 'CMA_ES'"):
        reg.get("cma-es")


def test_views_are_read_only_and_follow_the_registry():
    reg = Registry("thing", {"a": 1})
    view = reg.view()
    assert isinstance(view, RegistryView) and dict(view) == {"a": 1}
    reg.register("b", 2)
    assert list(view) == ["a", "b"] and view.get("b") == 2 and view.names() == ("a", "b")
    with pytest.raises(TypeError):
        view["c"] = 3
    with pytest.raises(TypeError):
        del view["a"]
    assert not hasattr(view, "register") and not hasattr(view, "unregister")
    with pytest.raises(JaxplaceError, match="did you mean 'a'"):
        view.get("aa")


def test_the_four_users_are_registries():
    """The objectives, search methods, bound ladder and commands use this mechanism."""
    from jaxplace.bounds.registry import BOUNDS
    from jaxplace.cli.main import COMMANDS
    from jaxplace.objectives.registry import OBJECTIVES
    from jaxplace.search.registry import METHODS

    assert isinstance(METHODS, Registry) and isinstance(COMMANDS, Registry)
    assert isinstance(BOUNDS, RegistryView) and isinstance(OBJECTIVES, RegistryView)
    assert list(OBJECTIVES)[:2] == ["throughput-unequal", "throughput"]
    with pytest.raises(JaxplaceError, match="did you mean 'bottleneck'"):
        BOUNDS.get("botleneck")
    with pytest.raises(JaxplaceError, match="did you mean 'partition'"):
        COMMANDS.get("partiton")


def test_objective_names_load_no_objective():
    """Listing the values `Problem.objective` may take reads the declared ones; a loaded
    objective must serve the problem objective it was registered with."""
    from jaxplace.objectives.registry import LazyObjective

    code = ("import sys\nfrom jaxplace.objectives.registry import problem_objectives\n"
            "print(problem_objectives(), "
            "[m for m in sys.modules if m.endswith('.objective')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "('throughput', 'latency', 'training') []", out.stderr
    wrong = LazyObjective("jaxplace.objectives.latency.objective:LATENCY", "throughput")
    with pytest.raises(TypeError, match="registered as 'throughput'"):
        Registry("objective", {"latency": wrong})["latency"]
