"""The Lab pages without Spark: launching (a real background manage.py process), progress,
heatmaps with their sentences, the worst run opened at its loss step, and refusals."""
import json
import os
import re
import time

import pytest
from django.test import Client

from engine.lab.grid import PRESET_RUNS, make_grid
from kafkaviz.lab import jobs
from kafkaviz.lab.spark_jobs import sweep_without_spark


def _configure(settings, root, data):
    settings.KAFKAVIZ_LAB = {"DIR": str(root), "LAUNCH": True, "MAX_RUNS": 400, "LOG_ROOTS": [str(data)],
                             "MASTER": None}


@pytest.fixture
def lab(tmp_path, settings):
    (tmp_path / "data").mkdir()
    _configure(settings, tmp_path / "lab", tmp_path / "data")
    return tmp_path / "lab"


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """A lab directory holding one finished sweep: HW vs epoch truncation x acks 1/all, seeds 40..69."""
    root = tmp_path_factory.mktemp("lab")
    sweep_without_spark(make_grid("truncation", runs=30, seed=40), root / "sweep-20260101-000000-abcd")
    return root


@pytest.fixture
def finished(sweep_dir, settings, tmp_path):
    _configure(settings, sweep_dir, tmp_path)
    return "sweep-20260101-000000-abcd"


def test_the_lab_page_offers_presets_axes_and_lists_past_results(finished):
    html = Client().get("/lab/").content.decode()
    assert 'name="preset"' in html and 'value="truncation"' in html
    assert 'name="axis_min_isr"' in html and 'name="axis_schedule"' in html
    assert f"/lab/sweeps/{finished}/" in html and "120 runs in 4 cells" in html


def test_a_sweep_shows_a_heatmap_per_metric_with_a_sentence_computed_from_its_cells(finished, sweep_dir):
    html = Client().get(f"/lab/sweeps/{finished}/").content.decode()
    figs = re.findall(r'<script id="(fig-\w+-\d)" type="application/json">(.*?)</script>', html, re.S)
    assert [f[0] for f in figs] == ["fig-loss-0", "fig-diverged-0", "fig-unavailable-0", "fig-duplicates-0"]
    fig = json.loads(figs[0][1])
    assert fig["data"][0]["type"] == "heatmap"
    assert (fig["data"][0]["x"], fig["data"][0]["y"]) == (["acks=1", "acks=all"], ["truncation=hw", "truncation=epoch"])
    sentence = re.search(r'id="metric-loss".*?class="sentence">([^<]*)', html, re.S).group(1)
    summary = json.loads((sweep_dir / finished / "summary.json").read_text())
    lossy = [c for c in summary["cells"] if c["runs_with_loss"]]
    assert lossy
    for c in lossy:
        label = f"acks={c['axes']['acks']}, truncation={c['axes']['truncation']}"
        assert (f"{label} in {c['runs_with_loss']} of {c['runs']} runs ({c['lost']} of {c['acked']} acknowledged "
                f"records)") in sentence
    assert "vendor/plotly-cartesian-4.1.1.min.js" in html and "js/lab.js" in html


def test_every_cell_links_to_its_worst_run_which_opens_at_the_step_that_lost_a_record(finished):
    html = Client().get(f"/lab/sweeps/{finished}/").content.decode()
    links = re.findall(r'href="(/lab/sweeps/[^"]+/worst/#step-(\d+))"', html)
    assert links, "no cell links to a loss step"
    url, step = links[0]
    page = Client().get(url.split("#")[0]).content.decode()
    loss = re.search(rf'<li id="step-{step}" class="run-step is-loss[^"]*">(.*?)</li>', page, re.S)
    assert loss and "lost" in loss.group(1)
    assert "python -m engine run --commands run.jsonl" in page
    assert "✓ The replay above produced exactly the sweep&#x27;s event stream." in page or \
        "✓ The replay above produced exactly the sweep's event stream." in page


def test_a_view_can_put_other_axes_on_x_and_y_and_htmx_gets_only_the_results(finished):
    r = Client().get(f"/lab/sweeps/{finished}/?x=truncation&y=acks", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results")
    html = r.content.decode()
    assert html.lstrip().startswith('<div id="results">') and "<html" not in html
    fig = json.loads(re.search(r'id="fig-loss-0" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert fig["data"][0]["x"] == ["truncation=hw", "truncation=epoch"]
    # One map per truncation rule instead of a y axis.
    html = Client().get(f"/lab/sweeps/{finished}/?x=acks&y=&facet=truncation").content.decode()
    titles = [json.loads(m)["layout"]["title"]["text"]
              for m in re.findall(r'id="fig-loss-\d" type="application/json">(.*?)</script>', html, re.S)]
    assert titles == ["truncation = hw", "truncation = epoch"]


def test_launching_runs_a_background_process_and_progress_turns_into_a_refresh(lab):
    r = Client().post("/lab/sweeps/", {"axis_truncation": ["hw", "epoch"], "runs": "3", "seed": "55",
                                       "no_spark": "1"})
    assert r.status_code == 302
    name = r["Location"].rstrip("/").rsplit("/", 1)[1]
    assert jobs.valid_name(name)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        p = Client().get(f"/lab/jobs/{name}/progress/")
        if p.has_header("HX-Refresh"):
            break
        assert 'hx-trigger="every 1s"' in p.content.decode()
        time.sleep(0.3)
    assert p["HX-Refresh"] == "true"
    assert jobs.get_job(name).state == "done"
    assert "Across (x)" in Client().get(f"/lab/sweeps/{name}/").content.decode()


@pytest.mark.parametrize("form, message", [
    ({"axis_acks": ["2"], "runs": "3", "seed": "0"}, "axis acks has no value"),
    ({"runs": "0", "seed": "0"}, "How many runs: at least 1"),
    ({"runs": "3", "seed": "-1"}, "seed must be 0 or more"),
    ({"runs": "many", "seed": "0"}, "whole numbers"),
    ({"preset": "full", "runs": "50", "seed": "0"}, "at most 400"),
])
def test_a_bad_sweep_form_is_refused_with_a_message_and_starts_nothing(lab, form, message):
    r = Client().post("/lab/sweeps/", form)
    assert r.status_code == 400 and message in r.content.decode()
    assert not lab.exists() or [p for p in lab.iterdir() if not p.name.startswith(".launch")] == []


def test_one_job_at_a_time_and_no_launching_when_switched_off(lab, settings):
    lab.mkdir(parents=True)
    (lab / ".sweep-20260101-000001-beef.job.json").write_text(json.dumps({"pid": os.getpid(), "args": []}))
    r = Client().post("/lab/sweeps/", {"runs": "1", "seed": "0"})
    assert r.status_code == 409 and "still running" in r.content.decode()
    settings.KAFKAVIZ_LAB = {**settings.KAFKAVIZ_LAB, "LAUNCH": False}
    r = Client().post("/lab/sweeps/", {"runs": "1", "seed": "0"})
    assert r.status_code == 403 and "switched off" in r.content.decode()


def test_analytics_only_reads_log_directories_under_the_allowed_roots(lab, tmp_path):
    r = Client().post("/lab/analytics/", {"logdir": "/etc"})
    assert r.status_code == 400 and "Only log directories under" in r.content.decode()
    r = Client().post("/lab/analytics/", {"logdir": str(tmp_path / "data")})
    assert r.status_code == 400 and "not a Kafka log directory" in r.content.decode()


@pytest.mark.parametrize("url, form, message", [
    ("/lab/sweeps/", {"runs": "0", "seed": "0"}, "运行次数：每种设置组合至少 1 次。"),
    ("/lab/sweeps/", {"axis_acks": ["2"], "runs": "3", "seed": "0"}, "实验室不认识这些设置"),
    ("/lab/analytics/", {"logdir": ""}, "请给出一个日志目录的路径。"),
    ("/lab/analytics/", {"logdir": "/etc"}, "这里只能分析本服务器允许的目录下的日志目录"),
])
def test_refusals_speak_chinese_with_lang_zh(lab, url, form, message):
    r = Client().post(url + "?lang=zh", form)
    assert r.status_code == 400 and message in r.content.decode()


def test_a_busy_or_switched_off_lab_says_so_in_chinese(lab, settings):
    lab.mkdir(parents=True)
    (lab / ".sweep-20260101-000001-beef.job.json").write_text(json.dumps({"pid": os.getpid(), "args": []}))
    r = Client().post("/lab/sweeps/?lang=zh", {"runs": "1", "seed": "0"})
    assert r.status_code == 409 and "另一个实验任务（sweep-20260101-000001-beef）还在运行" in r.content.decode()
    settings.KAFKAVIZ_LAB = {**settings.KAFKAVIZ_LAB, "LAUNCH": False}
    r = Client().post("/lab/sweeps/?lang=zh", {"runs": "1", "seed": "0"})
    assert r.status_code == 403 and "本服务器关闭了从此页面启动实验任务" in r.content.decode()


def test_unknown_or_malformed_job_names_are_404(lab):
    assert Client().get("/lab/sweeps/../../etc/").status_code == 404
    assert Client().get("/lab/sweeps/sweep-20260101-000000-ffff/").status_code == 404
    assert Client().get("/lab/jobs/nope/progress/").status_code == 404


def test_lessons_link_to_the_newest_sweep_of_a_preset_or_to_the_form_preset_chosen(finished):
    r = Client().get("/lab/latest/truncation/")
    assert r.status_code == 302 and r["Location"] == f"/lab/sweeps/{finished}/"
    r = Client().get("/lab/latest/unclean/")
    assert r["Location"] == "/lab/?preset=unclean#sweep-h"
    assert '<option value="unclean" selected>' in Client().get("/lab/?preset=unclean").content.decode()
    assert Client().get("/lab/latest/everything/").status_code == 404


def test_the_analytics_form_offers_this_browsers_own_sandboxes_only(lab, settings, tmp_path):
    from kafkaviz.live.sessions import SESSION_KEY

    settings.KAFKAVIZ_DATA_DIR = str(tmp_path / "data")
    client = Client()
    client.get("/lessons/segments/")                 # issues this browser's sandbox id
    sid = client.session[SESSION_KEY]["segments"]
    (tmp_path / "data" / sid).mkdir(parents=True)
    (tmp_path / "data" / "someone-elses-sandbox").mkdir()
    html = client.get("/lab/").content.decode()
    assert '<option value="segments">your sandbox of segments</option>' in html
    assert "someone-elses-sandbox" not in html
    # No server path on the page: not the sandbox's, not the allowed roots.
    assert str(tmp_path) not in html and sid not in html
    r = client.post("/lab/analytics/", {"sandbox": "retention"})      # not one of this browser's
    assert r.status_code == 400 and "not one of yours" in r.content.decode()


def test_the_form_speaks_plainly_with_the_presets_default_runs(finished):
    html = Client().get("/lab/?preset=truncation").content.decode()
    assert "Which settings" in html and "How many runs of each combination" in html
    assert "high-watermark or leader-epoch truncation (lesson 10)" in html
    assert f'name="runs" min="1" value="{PRESET_RUNS["truncation"]}"' in html


def test_the_lab_speaks_chinese_with_lang_zh(finished):
    html = Client().get("/lab/?lang=zh").content.decode()
    assert "持久性实验室" in html and "哪些设置" in html and "Which settings" not in html
    page = Client().get(f"/lab/sweeps/{finished}/?lang=zh").content.decode()
    sentence = re.search(r'id="metric-loss".*?class="sentence">([^<]*)', page, re.S).group(1)
    assert "丢失了已确认记录的有" in sentence and "acknowledged" not in sentence
    assert Client().get("/lab/latest/truncation/?lang=zh")["Location"] == f"/lab/sweeps/{finished}/?lang=zh"


def _fake_sweep(root, name, preset, runs, version):
    (root / name).mkdir(parents=True)
    (root / name / "summary.json").write_text(json.dumps({
        "kind": "sweep", "grid": {"preset": preset, "runs": runs, "seed": 0, "total_runs": runs, "cells": 1},
        "axes": [], "cells": [], "engine_version": version, "created": "2026-01-01T00:00:00+00:00"}))


def test_precompute_computes_only_the_lesson_presets_that_are_missing_or_stale(lab, capsys):
    from django.core.management import call_command

    from kafkaviz.lab.spark_jobs import engine_version

    lab.mkdir(parents=True)
    _fake_sweep(lab, "sweep-20260101-000001-aaaa", "truncation", 100, engine_version())
    _fake_sweep(lab, "sweep-20260101-000002-bbbb", "acks", 100, engine_version())
    _fake_sweep(lab, "sweep-20260101-000003-cccc", "unclean", 100, "sha256:an-older-engine")
    spawned = []
    from kafkaviz.lab import jobs as jobs_module

    def fake_spawn(kind, args, preset=None):
        spawned.append((kind, args, preset))
        return jobs_module.Job("sweep-20260101-000004-dddd", "sweep", "done", {}, None, None, {})
    original = jobs_module.spawn_and_wait
    jobs_module.spawn_and_wait = fake_spawn
    try:
        call_command("lab", "precompute", "--no-spark")
    finally:
        jobs_module.spawn_and_wait = original
    out = capsys.readouterr().out
    assert "truncation: sweep-20260101-000001-aaaa is up to date" in out and "acks: sweep-20260101-000002-bbbb" in out
    assert spawned == [("sweep", ["--preset", "unclean", "--quiet", "--no-spark"], "unclean")]


def test_a_lesson_link_shows_the_precompute_running_before_its_first_result(lab):
    lab.mkdir(parents=True)
    name = "sweep-20260101-000005-eeee"
    (lab / f".{name}.job.json").write_text(json.dumps({"pid": os.getpid(), "args": [], "preset": "acks"}))
    (lab / f".{name}.partial").mkdir()
    r = Client().get("/lab/latest/acks/")
    assert r.status_code == 302 and r["Location"] == f"/lab/sweeps/{name}/"
    assert 'id="progress"' in Client().get(r["Location"]).content.decode()
