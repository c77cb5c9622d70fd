"""The lab's grid: presets, --axis parsing, and the errors a user can make."""
import pytest

from engine.lab.grid import AXES, NOT_APPLICABLE, PRESETS, GridError, cell_id, make_grid, parse_axis_option


def test_a_preset_varies_its_axes_and_keeps_every_other_axis_at_its_default():
    grid = make_grid("acks", runs=3, seed=10)
    assert grid.axes == ["acks", "min_isr"]
    assert len(grid.cells) == 3 * 2
    for cell in grid.cells:
        settings = dict(cell)
        assert list(settings) == list(AXES)
        assert settings["truncation"] == AXES["truncation"].default
    specs = grid.specs()
    assert len(specs) == 18
    # Every cell replays the same schedules: run i has seed SEED + i in every cell.
    assert {s.seed for s in specs if s.run == 2} == {12}


def test_axis_option_replaces_a_preset_axis_and_canonicalises_values():
    grid = make_grid("truncation", {"acks": ["-1", "ALL", "0"]}, runs=1)
    assert dict(grid.varied)["acks"] == ("all", "0")
    assert parse_axis_option("min.insync.replicas=1,2") == ("min_isr", ("1", "2"))


@pytest.mark.parametrize("text, message", [
    ("colour=red", "unknown axis 'colour'"),
    ("acks=2", "axis acks has no value '2'"),
    ("acks=", "the grid would be empty"),
    ("acks", "--axis takes NAME=V1,V2"),
])
def test_bad_axis_options_are_refused_with_one_line(text, message):
    with pytest.raises(GridError) as err:
        parse_axis_option(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_an_empty_grid_and_an_unknown_preset_are_refused():
    with pytest.raises(GridError, match="would be empty"):
        make_grid("acks", runs=0)
    with pytest.raises(GridError, match="unknown preset"):
        make_grid("everything")


def test_a_named_scenario_keeps_its_own_settings_unless_the_grid_varies_them():
    grid = make_grid(None, {"schedule": ["random", "scenario:kip101-data-loss"], "acks": ["1", "all"]}, runs=1)
    scen = [dict(c) for c in grid.cells if dict(c)["schedule"].startswith("scenario:")]
    assert {c["acks"] for c in scen} == {"1", "all"}          # varied: applied
    assert {c["rf"] for c in scen} == {NOT_APPLICABLE}        # the scenario's own assignment
    assert {c["min_isr"] for c in scen} == {NOT_APPLICABLE}   # not varied: the scenario's own


def test_every_preset_expands_and_cell_ids_are_unique():
    for name in PRESETS:
        grid = make_grid(name, runs=1)
        ids = [cell_id(c) for c in grid.cells]
        assert len(ids) == len(set(ids)) > 1
