# kafkaviz — the two entry points are `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-slow venv deps deps-dev system-deps migrate test-web test-browser messages serve-prod
PROCESSES ?= 2

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

deps: venv
	$(BIN)/pip install -q -r requirements.txt

deps-dev: venv
	$(BIN)/pip install -q -r requirements-dev.txt

# Local development only: debug pages and a development secret. Production settings are
# the default (DEBUG off, DJANGO_SECRET_KEY required); see README, "Production".
DEV_ENV := DJANGO_DEBUG=1 DJANGO_SECRET_KEY=$${DJANGO_SECRET_KEY:-django-insecure-kafkaviz-make-run-only}

migrate: deps
	$(DEV_ENV) $(BIN)/python manage.py migrate --noinput

## Serve the app with daphne (ASGI: pages and WebSockets) on http://$(HOST):$(PORT)/ (development)
run: migrate
	@echo "kafkaviz is starting: open http://$(HOST):$(PORT)/"
	@# The lab results lessons link to, computed in the background at the first start (then kept).
	@# KAFKAVIZ_LAB_PRECOMPUTE=0 skips it (the docs test starts this server and must leave no sweep behind).
	[ "$${KAFKAVIZ_LAB_PRECOMPUTE:-1}" = 0 ] || { $(DEV_ENV) setsid $(BIN)/python manage.py lab precompute >/dev/null 2>&1 & }
	$(DEV_ENV) $(BIN)/python -m daphne -b $(HOST) -p $(PORT) kafkaviz.asgi:application

## Production, locally: Redis and PostgreSQL (started in a temp dir unless REDIS_URL /
## DATABASE_URL are set), migrate, collectstatic, $(PROCESSES) daphne processes on ports
## $(PORT).. ; DEBUG off. Ctrl-C stops everything it started.
serve-prod: deps system-deps
	$(BIN)/python -m kafkaviz.serve --processes $(PROCESSES) --host $(HOST) --port $(PORT)

## Debian packages the tests use: chromium (browser tests), redis-server (channel layer,
## serve-prod), PostgreSQL 15 (serve-prod, the web tests against PostgreSQL), Java 17 (Spark,
## for the lab), gettext (msgfmt: `make messages`; the compiled .mo files are committed).
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v msgfmt >/dev/null 2>&1 || missing="$$missing gettext"; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	[ -x /usr/local/bin/pg_ctl ] || [ -x /usr/lib/postgresql/15/bin/pg_ctl ] || missing="$$missing postgresql-15"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

## The whole test suite (soaks and sweeps marked slow run with `make test-slow`). Make cannot pass pytest's exit code through, so "no tests
## collected" (5) is reported here and counted as success, as .ci/run expects.
test: system-deps deps-dev
	@$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests (exit 5): counted as success"; exit 0; fi; \
	exit $$status

## Long soaks and sweeps (hours of CPU at most; not run by CI).
test-slow: system-deps deps-dev
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-web: deps-dev
	$(BIN)/python -m pytest tests/web

test-browser: system-deps deps-dev
	$(BIN)/python -m pytest tests/browser

## Re-extract the UI strings into locale/*/django.po and compile the .mo files (committed).
messages: deps
	$(BIN)/python manage.py makemessages -l zh_Hans -i ".venv/*" -i "tests/*" -i "bench/*"
	$(BIN)/python manage.py compilemessages

## Every benchmark in bench/, each figure printed beside its goal (a few minutes; see bench/README.md).
.PHONY: bench
bench: deps-dev
	@for b in bench_codec bench_log bench_cluster bench_frames bench_memory bench_groups bench_timer bench_idempotence bench_validation bench_sandboxes bench_page_weight bench_classroom bench_wire; do \
	  echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py || exit $$?; \
	done
