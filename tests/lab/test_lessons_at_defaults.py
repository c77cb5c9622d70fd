"""Each preset the lessons link to, at its defaults (its default runs, seed 0, the default
mixed schedules; no seed chosen by hand), shows what its lesson says, and every heatmap's
sentence states the figures it sits on.

- Lesson 10 (leader epoch, /lab/latest/truncation/): truncating to the high watermark loses
  acknowledged records in a visible share of runs even with acks=all; leader epochs lose none.
- Lesson 9 (acks and min ISR, /lab/latest/acks/): acks=1 loses acknowledged records when a leader
  dies; acks=all with min.insync.replicas=2 never does; min.insync.replicas=1 can, and 2 pays
  for the safety with time the client cannot write; acks=0 cannot be counted.
- Lesson 11 (unclean election, /lab/latest/unclean/): unclean election loses acknowledged
  records that clean election keeps, under either truncation rule.
"""
import re

import pytest

from engine.lab.grid import PRESET_RUNS, make_grid
from kafkaviz.lab import figures
from kafkaviz.lab.spark_jobs import sweep


@pytest.fixture(scope="module")
def presets(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("presets")
    return {p: sweep(make_grid(p), root / p, spark=spark) for p in ("truncation", "acks", "unclean")}


def cell(summary, **axes):
    (found,) = [c for c in summary["cells"] if all(c["axes"][a] == v for a, v in axes.items())]
    return found


def share(c):
    return c["runs_with_loss"] / c["runs"]


def test_lesson_10_hw_truncation_loses_acknowledged_records_in_a_visible_share_and_epochs_none(presets):
    s = presets["truncation"]
    assert s["grid"]["runs"] == PRESET_RUNS["truncation"] and s["grid"]["seed"] == 0
    hw, epoch = cell(s, acks="all", truncation="hw"), cell(s, acks="all", truncation="epoch")
    assert share(hw) >= 0.05 and hw["lost"] > 0
    assert epoch["lost"] == 0 and epoch["runs_with_loss"] == 0 and epoch["acked"] > 500
    assert cell(s, acks="1", truncation="epoch")["lost"] > 0


def test_lesson_9_acks_1_loses_acks_all_min_isr_2_never_and_min_isr_2_costs_availability(presets):
    s = presets["acks"]
    for min_isr in ("1", "2"):
        assert share(cell(s, acks="1", min_isr=min_isr)) >= 0.05
    safe, weaker = cell(s, acks="all", min_isr="2"), cell(s, acks="all", min_isr="1")
    assert s["grid"]["runs"] == PRESET_RUNS["acks"] and s["grid"]["seed"] == 0
    assert safe["lost"] == 0 and safe["acked"] > 500
    assert weaker["lost"] > 0
    assert safe["unavailable_ms_mean"] > 1.2 * weaker["unavailable_ms_mean"] > 0
    assert safe["produce_failed"] > weaker["produce_failed"]
    blind = cell(s, acks="0", min_isr="2")
    assert blind["acked"] == 0 and blind["sent"] > 0 and blind["missing_at_end"] > 0


def test_lesson_11_unclean_election_loses_what_clean_election_keeps(presets):
    s = presets["unclean"]
    assert s["grid"]["runs"] == PRESET_RUNS["unclean"] and s["grid"]["seed"] == 0
    assert cell(s, unclean="true", acks="all", truncation="epoch")["lost"] > 0
    assert cell(s, unclean="false", acks="all", truncation="epoch")["lost"] == 0


def test_acks_0_cells_say_loss_cannot_be_counted_and_show_what_went_missing(presets):
    s = presets["acks"]
    panels = figures.build_panels("x", s, figures.choose_view(s, {}))
    loss = next(p for p in panels if p["key"] == "loss")
    blind = [c for m in loss["maps"] for r in m["rows"] for c in r["cells"] if c and "acks=0" in c["label"]]
    assert blind and all(c["text"].startswith("not acknowledged") and "missing at end" in c["text"] for c in blind)
    assert "0%" not in " ".join(c["text"] for c in blind)
    cells0 = [c for c in s["cells"] if c["axes"]["acks"] == "0"]
    missing, sent = sum(c["missing_at_end"] for c in cells0), sum(c["sent"] for c in cells0)
    assert f"acks=0 is not acknowledged, so loss cannot be counted: {missing} of {sent} records sent" in loss["sentence"]


def _cells_by_label(summary, view):
    named = [a for a in (view["x"], view["y"], view["facet"]) if a] + list(view["slice"])
    return {", ".join(f"{a}={c['axes'][a]}" for a in named): c for c in summary["cells"]}


@pytest.mark.parametrize("preset", ["truncation", "acks", "unclean"])
def test_every_sentence_states_exactly_the_figures_of_the_cells_it_names(presets, preset):
    s = presets[preset]
    view = figures.choose_view(s, {})
    by_label = _cells_by_label(s, view)
    panels = {p["key"]: p["sentence"] for p in figures.build_panels("x", s, view)}
    # Loss: "LABEL in N of M runs (K of A acknowledged records)" for each lossy cell it names,
    # and no lossy cell among those it says lost nothing.
    label_re = r"((?:\w+=[\w:+.\-]+)(?:, \w+=[\w:+.\-]+)*)"
    named = re.findall(label_re + r" in (\d+) of (\d+) runs \((\d+) of (\d+) acknowledged records\)", panels["loss"])
    assert named
    for label, n, m, k, a in named:
        c = by_label[label]
        assert (c["runs_with_loss"], c["runs"], c["lost"], c["acked"]) == tuple(map(int, (n, m, k, a)))
    safe = re.search(r"None was lost with (.*?)(?: and \d+ more cells)?, over the same", panels["loss"])
    counted = [c for c in s["cells"] if c["axes"].get("acks") != "0"]
    if safe:
        for c in counted:
            if c["runs_with_loss"]:
                assert f"with {_label(c, view)}, over" not in panels["loss"]
    assert any(c["runs_with_loss"] == 0 for c in counted) == bool(safe)
    # Unavailable time: the mean over all runs shown, and the longest cell's mean and maximum.
    runs = sum(c["runs"] for c in s["cells"])
    mean = sum(c["unavailable_ms_mean"] * c["runs"] for c in s["cells"]) / runs
    assert f"for {mean:,.0f} ms of virtual time per run on average" in panels["unavailable"]
    worst = max(s["cells"], key=lambda c: (c["unavailable_ms_mean"], c["cell"]))
    assert (f"longest with {_label(worst, view)} ({worst['unavailable_ms_mean']:,.0f} ms per run, at most "
            f"{worst['unavailable_ms_max']} ms)") in panels["unavailable"]


def _label(c, view):
    named = [a for a in (view["x"], view["y"], view["facet"]) if a] + list(view["slice"])
    return ", ".join(f"{a}={c['axes'][a]}" for a in named)
