"""Shared by every test directory -- kept empty on purpose: web fixtures live in
tests/web/conftest.py and tests/browser/conftest.py, so engine test runs stay light."""
