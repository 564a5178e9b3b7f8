# The two set-up commands of the README:
#   make demo   install everything and run the main comparison (writes reports/demo/)
#   make test   install everything and run every test (Rust and Python)
#
# Both install into a virtual environment of their own, .venv, made on first use with the system's
# packages visible (--system-site-packages), so what the machine already has is not downloaded again
# and a system Python that refuses `pip install` (Debian's) is never touched. Give PYTHON to install
# into another Python instead: `make PYTHON=python3 test`.
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python

.PHONY: venv install live-deps pcap-deps crosscheck-deps ray-deps browser-deps learn-deps demo test rust-test py-test lint bench

venv:
	@[ "$(PYTHON)" != "$(VENV)/bin/python" ] || [ -x "$(VENV)/bin/python" ] || \
	  python3 -m venv --system-site-packages "$(VENV)"

install: venv
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'

demo: install
	$(PYTHON) -m rtcc demo --force

test: install live-deps pcap-deps crosscheck-deps ray-deps browser-deps learn-deps rust-test py-test

# The live tests put iperf3 through `rtcc emu`; as root on Debian it is installed here, elsewhere
# those tests are skipped with the reason.
live-deps:
	@command -v iperf3 >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 >/dev/null 2>&1; }; }; } || \
	  echo "note: iperf3 could not be installed; the live tests will be skipped"

# The packet-capture test reads `rtcc run --pcap` files with Wireshark's dissectors (tshark, from
# Debian as root); elsewhere that part of the test is skipped with the reason.
pcap-deps:
	@command -v tshark >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q tshark >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q tshark >/dev/null 2>&1; }; }; } || \
	  echo "note: tshark could not be installed; the pcap dissector check will be skipped"

# The GCC cross-check replays rtcc's packets into aiortc (PyPI) and pion (Go, from the module
# proxy); without them its tests are skipped with the reason.
crosscheck-deps: venv
	@$(PYTHON) -m pip install --quiet --disable-pip-version-check -r bench/gcc_crosscheck/aiortc/requirements.txt 2>/dev/null || \
	  echo "note: aiortc could not be installed; the aiortc cross-check will be skipped"
	@command -v go >/dev/null && (cd bench/gcc_crosscheck/pion && go mod download) || \
	  echo "note: no Go toolchain or module proxy; the pion cross-check will be skipped"

# `rtcc sweep --backend ray`; without Ray its equivalence test is skipped with the reason.
ray-deps: venv
	@$(PYTHON) -m pip install --quiet --disable-pip-version-check 'ray>=2.9' 2>/dev/null || \
	  echo "note: Ray could not be installed; the Ray sweep test will be skipped"

# The learning environment's optional extras (Gymnasium, PettingZoo, onnxruntime) and onnx, which
# the tests use to write small policies; without them those tests are skipped with the reason.
# stable-baselines3 is never installed here: PyPI's torch brings gigabytes of GPU libraries (the
# PPO example says how to install it; CI trains with a NumPy learner instead).
learn-deps: venv
	@$(PYTHON) -m pip install --quiet --disable-pip-version-check 'gymnasium>=1.0' 'pettingzoo>=1.24' 'onnxruntime>=1.17' onnx 2>/dev/null || \
	  echo "note: gymnasium, pettingzoo or onnxruntime could not be installed; the learning tests will be skipped"

# The report pages are opened in headless Chromium (Debian's package, as root) through Playwright;
# without them the browser test is skipped with the reason.
browser-deps: venv
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }; }; } || \
	  echo "note: chromium could not be installed; the browser test will be skipped"
	@$(PYTHON) -m pip install --quiet --disable-pip-version-check playwright 2>/dev/null || \
	  echo "note: Playwright could not be installed; the browser test will be skipped"

rust-test:
	cargo test --workspace --quiet

py-test: venv
	$(PYTHON) -m pytest -q --durations=15

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: install
	cargo bench -p rtcc-sim
	$(PYTHON) -m rtcc bench
