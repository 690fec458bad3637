"""Results, certificates and torch plans display themselves in notebooks (rich HTML)."""

import pytest

import jaxplace as jp


def test_certificate_and_result_show_their_plan():
    problem = jp.Problem(jp.generators.transformer(layers=2), k=2)
    result = jp.search(problem, "dfs")
    cert = jp.certify(problem, partition=result.partition, methods=["simple"])
    for obj in (result, cert):
        page = obj._repr_html_()
        assert page.startswith("<div>") and "<script" not in page
    assert "simple" in cert._repr_html_()  # the ladder's rung


def test_torch_plan_shows_its_stages():
    torch = pytest.importorskip("torch")
    from jaxplace.torch import plan_pipeline

    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])
    plan = plan_pipeline(model, (torch.randn(2, 8),), k=2)
    page = plan._repr_html_()
    assert page.startswith("<div>") and page.count("data-stage") >= 2
