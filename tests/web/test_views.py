"""Pages: the lesson catalogue, lesson 2, and its htmx partial."""
from __future__ import annotations

import re

import pytest

from django.conf import settings
from django.core import signing
from django.test import Client

from kafkaviz.lessons.catalogue import LESSONS


def test_home_lists_all_fifteen_lessons():
    html = Client().get("/").content.decode()
    for lesson in LESSONS:
        assert f'id="lesson-{lesson.number}"' in html
        assert lesson.title.replace("'", "&#x27;") in html
    assert len(LESSONS) >= 16


def test_home_links_every_lesson_of_the_course():
    html = Client().get("/").content.decode()
    assert len(LESSONS) >= 16 and all(lesson.available for lesson in LESSONS)
    for lesson in LESSONS:
        assert f'href="/lessons/{lesson.slug}/"' in html
    assert "not yet available" not in html.lower() and "planned" not in html.lower()
    assert "尚未开放" not in Client().get("/?lang=zh").content.decode()


@pytest.mark.parametrize("slug", [lesson.slug for lesson in LESSONS])
def test_every_lesson_page_renders_in_english(slug):
    response = Client().get(f"/lessons/{slug}/")
    assert response.status_code == 200
    assert 'data-diagram="' in response.content.decode()


def test_unknown_lesson_is_404():
    assert Client().get("/lessons/no-such-lesson/").status_code == 404


def test_lesson_two_renders_controls_diagram_and_config():
    response = Client().get("/lessons/segments/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'ws-connect="/ws/lessons/segments/?lang=en"' in html
    assert 'data-diagram="partition-dir"' in html and 'data-diagram="timeline"' in html
    assert re.search(r"<code>segment\.bytes</code></th><td>1000</td><td>1073741824</td>", html)
    assert re.search(r"<code>retention\.bytes</code></th><td>2000</td>", html)
    assert 'id="produce-button"' in html and 'id="advance-button"' in html and 'id="reset-button"' in html
    assert "Make partition 0 roll a third segment." in html
    assert "/static/vendor/htmx-2.0.11.min.js" in html


def test_lesson_two_issues_a_signed_sandbox_id_in_the_session():
    response = Client().get("/lessons/segments/")
    cookie = response.cookies[settings.SESSION_COOKIE_NAME].value
    data = signing.loads(cookie, salt="django.contrib.sessions.backends.signed_cookies",
                         serializer=signing.JSONSerializer)
    assert re.fullmatch(r"[0-9a-f]{32}", data["kafkaviz_sandboxes"]["segments"])


def test_lesson_two_keeps_the_same_sandbox_across_visits():
    client = Client()
    first = client.get("/lessons/segments/").cookies[settings.SESSION_COOKIE_NAME].value
    client.get("/lessons/segments/")
    data1 = signing.loads(first, salt="django.contrib.sessions.backends.signed_cookies",
                          serializer=signing.JSONSerializer)
    data2 = signing.loads(client.cookies[settings.SESSION_COOKIE_NAME].value,
                          salt="django.contrib.sessions.backends.signed_cookies", serializer=signing.JSONSerializer)
    assert data1["kafkaviz_sandboxes"] == data2["kafkaviz_sandboxes"]


def test_htmx_request_gets_only_the_explanation_partial():
    response = Client().get("/lessons/segments/?lang=zh", headers={"HX-Request": "true", "HX-Target": "explanation"})
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="explanation"')
    assert "<html" not in html and "produce-button" not in html
    assert "段" in html


def test_full_page_in_chinese_without_htmx():
    html = Client().get("/lessons/segments/?lang=zh").content.decode()
    assert "<html" in html and "段文件" in html and "分区目录" in html and "跳转时钟" in html


def test_healthz():
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


@pytest.mark.parametrize("path", ["/lessons/segments/", "/lessons/leader-epoch/"])
def test_language_switch_links_to_the_other_language_and_marks_the_current_one(path):
    html = Client().get(path + "?lang=zh").content.decode()
    assert '<span aria-current="true">简体中文</span>' in html
    assert 'href="?lang=en"' in html


@pytest.mark.parametrize("slug, preset", [("isr-and-acks", "acks"), ("leader-epoch", "truncation"),
                                          ("leader-election", "unclean")])
def test_replication_lessons_link_to_the_durability_labs_results(slug, preset):
    html = Client().get(f"/lessons/{slug}/").content.decode()
    assert f'href="/lab/latest/{preset}/"' in html
    assert Client().get(f"/lab/latest/{preset}/").status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/lessons/segments/", "/sandbox/", "/healthz", "/lab/"])
def test_pages_answer_head_like_get_without_a_body(path):
    # Link checkers and monitors send HEAD; require_safe answers it, POST stays refused.
    client = Client()
    head = client.head(path)
    assert head.status_code == 200 and head.content == b""
    assert client.post(path).status_code in (403, 405)


@pytest.mark.django_db
def test_the_sandbox_page_reads_in_chinese():
    html = Client().get("/sandbox/?lang=zh").content.decode()
    assert "<h1" in html and "沙盒" in html and "图一次只显示主题" in html
    assert "数据丢失（KIP-101 场景 1）" in html          # the scenario names, from the same file
    assert 'id="partition-form"' in html and "显示的分区" in html


def test_the_sandbox_is_not_called_lesson_0():
    html = Client().get("/sandbox/").content.decode()
    assert "Lesson 0" not in html and "<h1>Sandbox</h1>" in html
    assert "<title>Sandbox · kafkaviz</title>" in html


@pytest.mark.parametrize("slug", ["time-index", "retention", "flush-and-page-cache"])
def test_a_storage_lesson_offers_chinese_and_reads_in_it(slug):
    from kafkaviz.lessons.content import load_content

    zh = load_content(slug, "zh")
    assert 'href="?lang=zh"' in Client().get(f"/lessons/{slug}/").content.decode()
    html = Client().get(f"/lessons/{slug}/?lang=zh").content.decode()
    assert f"第 {zh.number} 课：{zh.title}" in html and str(zh.explanation_html()) in html
    assert '<span aria-current="true">简体中文</span>' in html
