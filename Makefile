# kafkaviz — the two entry points are `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test venv deps deps-dev system-deps migrate test-web test-browser messages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

deps: venv
	$(BIN)/pip install -q -r requirements.txt

deps-dev: venv
	$(BIN)/pip install -q -r requirements-dev.txt

migrate: deps
	$(BIN)/python manage.py migrate --noinput

## Serve the app with daphne (ASGI: pages and WebSockets) on http://$(HOST):$(PORT)/
run: migrate
	@echo "kafkaviz is starting: open http://$(HOST):$(PORT)/"
	$(BIN)/python -m daphne -b $(HOST) -p $(PORT) kafkaviz.asgi:application

## Debian packages the tests use: chromium (browser tests), redis-server (channel-layer test),
## gettext (msgfmt: `make messages`; the compiled .mo files are committed).
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v msgfmt >/dev/null 2>&1 || missing="$$missing gettext"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

## The whole test suite. Make cannot pass pytest's exit code through, so "no tests
## collected" (5) is reported here and counted as success, as .ci/run expects.
test: system-deps deps-dev
	@$(BIN)/python -m pytest $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests (exit 5): counted as success"; exit 0; fi; \
	exit $$status

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
	@for b in bench_codec bench_log bench_cluster bench_frames; do \
	  echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py || exit $$?; \
	done
