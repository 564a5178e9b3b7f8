# The two set-up commands of the README:
#   make demo   install everything and run the main comparison (writes reports/demo/)
#   make test   install everything and run every test (Rust and Python)
PYTHON ?= python3

.PHONY: install demo test rust-test py-test lint bench

install:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'

demo: install
	$(PYTHON) -m rtcc demo --force

test: install rust-test py-test

rust-test:
	cargo test --workspace --quiet

py-test:
	$(PYTHON) -m pytest -q

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: install
	cargo bench -p rtcc-sim
	$(PYTHON) -m rtcc bench
