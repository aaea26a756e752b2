# The two entry points of a fresh clone (README): `make demo` and `make check`. Both install
# what is missing and build incrementally through tools/setup.sh.
BUILD ?= build
export GLM5C_BUILD_DIR := $(abspath $(BUILD))

.PHONY: build demo check
build:
	@tools/setup.sh

# The main job on the built-in tiny GLM-5 fixture: generate it, then inspect it.
demo: build
	@mkdir -p $(BUILD)/demo
	$(BUILD)/bin/glm5-gguf make --preset tiny --seed 1 --quant-mix mixed -o $(BUILD)/demo/glm5-tiny.gguf
	$(BUILD)/bin/glm5-gguf inspect $(BUILD)/demo/glm5-tiny.gguf

check: build
	@python3 test/run_tests.py --build-dir $(BUILD)
