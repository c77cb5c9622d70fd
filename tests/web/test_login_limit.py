"""The login rate limit (django-axes, kafkaviz/classroom/lockout.py): wrong passwords are
counted per username and per client address; at the limit the account (or the address) is
locked, the right password included, with a page that says why and for how long."""
from __future__ import annotations

import os
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"
LIMIT = django_settings.AXES_FAILURE_LIMIT


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def teacher():
    os.environ["LOGIN_TEST_PASSWORD"] = PASSWORD
    call_command("createinstructor", "teacher", password_env="LOGIN_TEST_PASSWORD", stdout=open(os.devnull, "w"))
    return get_user_model().objects.get(username="teacher")


def attempt(address: str, username: str, password: str, path: str = "/accounts/login/"):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(path, {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_the_limit_is_on_by_default_and_counts_username_and_address_apart():
    assert 3 <= LIMIT <= 20
    assert django_settings.AXES_LOCKOUT_PARAMETERS == ["username", "ip_address"]
    assert django_settings.AXES_COOLOFF_TIME == timedelta(minutes=15)


def test_wrong_passwords_below_the_limit_still_let_the_right_one_in(teacher):
    for _ in range(LIMIT - 1):
        _, response = attempt("10.0.0.1", "teacher", "wrong")
        assert response.status_code == 200
    client, response = attempt("10.0.0.1", "teacher", PASSWORD)
    assert response.status_code == 302 and logged_in(client)


def test_wrong_passwords_for_one_username_from_many_addresses_lock_that_username(teacher):
    for i in range(LIMIT):
        _, response = attempt(f"10.0.1.{i}", "teacher", "wrong")
        assert response.status_code in (200, 429)
    client, response = attempt("10.0.2.1", "teacher", PASSWORD)
    assert response.status_code == 429 and not logged_in(client)
    text = response.content.decode()
    assert "Login locked" in text and "Too many wrong passwords" in text and "15 minutes" in text
    assert "even the right password is refused" in text


def test_wrong_passwords_from_one_address_lock_that_address_for_every_username(teacher):
    for i in range(LIMIT):
        attempt("10.0.3.1", f"guess{i}", "wrong")
    client, response = attempt("10.0.3.1", "teacher", PASSWORD)
    assert response.status_code == 429 and not logged_in(client)
    # Another address is not locked: the right password works there.
    client, response = attempt("10.0.3.2", "teacher", PASSWORD)
    assert response.status_code == 302 and logged_in(client)


def test_forty_wrong_passwords_on_the_admin_login_lock_it_too(teacher):
    get_user_model().objects.filter(pk=teacher.pk).update(is_staff=True, is_superuser=True)
    statuses = [attempt("10.0.4.1", "teacher", "wrong", "/admin/login/")[1].status_code for _ in range(40)]
    assert statuses[:LIMIT - 1] == [200] * (LIMIT - 1)
    assert set(statuses[LIMIT:]) == {429}
    client, response = attempt("10.0.4.9", "teacher", PASSWORD, "/admin/login/")
    assert response.status_code == 429 and not logged_in(client)
    assert "Login locked" in response.content.decode()


def test_the_lock_out_page_speaks_the_pages_language(teacher):
    for i in range(LIMIT):
        attempt(f"10.0.5.{i}", "teacher", "wrong")
    client = Client(REMOTE_ADDR="10.0.5.99")
    response = client.post("/accounts/login/?lang=zh", {"username": "teacher", "password": PASSWORD})
    assert response.status_code == 429
    text = response.content.decode()
    assert "登录已锁定" in text and "15" in text and 'lang="zh-Hans"' in text


def test_the_lock_ends_after_the_cool_off(teacher):
    for i in range(LIMIT):
        attempt(f"10.0.6.{i}", "teacher", "wrong")
    assert attempt("10.0.6.99", "teacher", PASSWORD)[1].status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    client, response = attempt("10.0.6.99", "teacher", PASSWORD)
    assert response.status_code == 302 and logged_in(client)


def test_the_test_clients_login_without_a_request_is_not_counted(teacher):
    client = Client()
    assert client.login(username="teacher", password=PASSWORD)
    assert not Client().login(username="teacher", password="wrong")
    assert AccessAttempt.objects.count() == 0
