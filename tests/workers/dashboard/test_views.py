"""What the dashboard's pages are built from, without a server: formulas, filters, curves and
code diffs."""

from __future__ import annotations

import pytest

from workers.dashboard.app import _byte_range, artifact_url
from workers.dashboard.artifacts import curves, reward_diff
from workers.dashboard.formula import mathml
from workers.dashboard.sessions import FilterError, list_query


def test_a_formula_becomes_mathml():
    html = str(mathml(r"r_t = 1.0\,\dot{x}_t - 0.1\,\lVert a_t \rVert^2"))
    assert html.startswith("<math") and "<msub>" in html and "script" not in html


@pytest.mark.parametrize(
    "latex",
    [
        r"\text{<img src=x onerror=alert(1)>}",
        r"\href{javascript:alert(1)}{x}",
        r"\text{</math><script>alert(1)</script>}",
    ],
)
def test_a_formula_cannot_carry_markup(latex):
    html = str(mathml(latex))
    assert "<img" not in html and "<script" not in html and "href=" not in html
    assert html.startswith('<code class="latex">')


def test_filters_become_a_visibility_query():
    query = list_query("SessionWorkflow", {"stage": "training", "env": "Ant-v5", "passed": "true"})
    assert query == (
        "WorkflowType = 'SessionWorkflow' AND PolicyforgeStage = 'training' "
        "AND PolicyforgeEnv = 'Ant-v5' AND PolicyforgePassed = true"
    )
    assert "\\'" in list_query("SessionWorkflow", {"model": "o'hara"})
    with pytest.raises(FilterError, match="passed"):
        list_query("SessionWorkflow", {"passed": "1 OR 1=1"})
    with pytest.raises(FilterError, match="unknown filter"):
        list_query("SessionWorkflow", {"owner": "me"})


def test_curves_keep_gaps_and_split_returns_terms_and_losses():
    rows = [
        {"timesteps": 2048, "ep_return_mean": None, "term_forward": 0.1, "value_loss": 2.0},
        {
            "timesteps": 4096,
            "ep_return_mean": 12.5,
            "term_forward": 0.3,
            "value_loss": float("nan"),
        },
    ]
    charts = curves(rows)
    assert charts["returns"] == {"x": [2048.0, 4096.0], "ep_return_mean": [None, 12.5]}
    assert charts["terms"]["term_forward"] == [0.1, 0.3]
    assert charts["losses"]["value_loss"] == [2.0, None]


def test_reward_diff_marks_added_and_removed_lines():
    diff = reward_diff("a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert ("del", "-b = 2") in diff and ("add", "+b = 3") in diff
    assert reward_diff("same", "same") == [] and reward_diff(None, "x") == []


def test_byte_ranges_and_artifact_links():
    assert _byte_range("bytes=0-99", 1000) == (0, 99)
    assert _byte_range("bytes=900-", 1000) == (900, 999)
    assert _byte_range("bytes=-100", 1000) == (900, 999)
    assert _byte_range("bytes=2000-", 1000) is None
    assert _byte_range("lines=1-2", 1000) is None
    url = artifact_url("pf-x", "sessions/pf-x/iter_1/c0_default_seed_0/videos/eval.mp4")
    assert url == "/artifacts/pf-x/iter_1/c0_default_seed_0/videos/eval.mp4"
