"""The durability lab on Spark (local[2]): same rows as --no-spark, run by run, typed Parquet,
one file per cell, and progress from Spark's status tracker."""
import json

import pytest

from engine.lab.grid import make_grid
from engine.lab.runs import ROW_FIELDS
from kafkaviz.lab.spark_jobs import _row_schema, read_summary, sweep, sweep_without_spark

# A small grid at the default schedules: equality is what is tested here, not the lessons
# (tests/lab/test_lessons_at_defaults.py runs each preset at its defaults).
GRID = dict(preset="truncation", runs=15, seed=0)


@pytest.fixture(scope="module")
def results(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    grid = make_grid(GRID["preset"], runs=GRID["runs"], seed=GRID["seed"])
    seen = []
    on_spark = sweep(grid, root / "spark", spark=spark, progress=seen.append)
    plain = sweep_without_spark(grid, root / "plain")
    spark_rows = [r.asDict() for r in spark.read.schema(_row_schema()).parquet(str(root / "spark" / "runs")).collect()]
    plain_rows = [json.loads(line) for line in (root / "plain" / "runs.jsonl").read_text().splitlines()]
    return dict(root=root, grid=grid, spark=on_spark, plain=plain, spark_rows=spark_rows,
                plain_rows=plain_rows, progress=seen)


def _by_run(rows):
    return {(r["cell"], r["run"]): r for r in rows}


def test_spark_and_no_spark_give_identical_results_run_by_run(results):
    spark_rows, plain_rows = _by_run(results["spark_rows"]), _by_run(results["plain_rows"])
    assert len(spark_rows) == len(plain_rows) == 4 * GRID["runs"]
    assert spark_rows.keys() == plain_rows.keys()
    for key in plain_rows:
        assert spark_rows[key] == plain_rows[key], key     # event digests included


def test_spark_aggregation_equals_the_plain_python_figures(results):
    assert results["spark"]["cells"] == results["plain"]["cells"]
    assert read_summary(results["root"] / "spark") == results["spark"]


def test_parquet_is_partitioned_by_the_grids_axes_one_file_per_cell_with_typed_columns(results, spark):
    runs = results["root"] / "spark" / "runs"
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == ["acks=1", "acks=all"]
    assert sorted(p.name for p in (runs / "acks=all").iterdir()) == ["truncation=epoch", "truncation=hw"]
    for cell_dir in runs.glob("acks=*/truncation=*"):
        assert len(list(cell_dir.glob("*.parquet"))) == 1, cell_dir
    # Read without our schema, as a downstream user would: the columns in the files are typed.
    types = dict(spark.read.parquet(str(runs)).dtypes)
    assert (types["rf"], types["min_isr"], types["unclean"], types["steps"]) == ("int", "int", "boolean", "int")
    assert types["lost"] == "bigint" and types["schedule"] == "string"
    row = results["plain_rows"][0]
    assert (row["rf"], row["unclean"], row["acks"]) == (3, False, "1")
    assert [f["name"] for f in results["spark"]["row_schema"]] == [n for n, _ in ROW_FIELDS]


def test_the_worst_run_carries_a_command_log_that_replays(results):
    for cell in results["spark"]["cells"]:
        assert cell["worst"]["command_log"].startswith('{"config"')


def test_summary_says_what_each_figure_means_its_unit_and_the_engine(results):
    s = results["spark"]
    assert s["engine_version"].startswith("sha256:")
    for name in s["figures"]:
        assert s["definitions"]["cell"][name]["unit"] and s["definitions"]["cell"][name]["definition"]


def test_progress_comes_from_sparks_status_tracker_and_only_grows(results):
    seen = results["progress"]
    last = seen[-1]
    assert last["runs_done"] == last["runs_total"] == 4 * GRID["runs"]
    done = [p["runs_done"] for p in seen]
    assert done == sorted(done)


def test_an_existing_result_is_never_overwritten(results, spark):
    from kafkaviz.lab.spark_jobs import LabError

    before = (results["root"] / "spark" / "summary.json").read_bytes()
    with pytest.raises(LabError, match="already exists"):
        sweep(results["grid"], results["root"] / "spark", spark=spark)
    assert (results["root"] / "spark" / "summary.json").read_bytes() == before
