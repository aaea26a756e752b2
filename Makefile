# The two entry points of a fresh clone (README): `make demo` and `make check`. Both install
# what is missing and build incrementally through tools/setup.sh.
BUILD ?= build
export GLM5C_BUILD_DIR := $(abspath $(BUILD))

.PHONY: build demo check
build:
	@tools/setup.sh

# The main job on the built-in tiny GLM-5 fixture: generate it, inspect it, compile it into a
# plan (host target: CI machines have no GPU) and generate text with it. Its weights are random,
# so the text is too; the command shows the whole path working.
demo: build
	@mkdir -p $(BUILD)/demo
	$(BUILD)/bin/glm5-gguf make --preset tiny --seed 1 --quant-mix mixed -o $(BUILD)/demo/glm5-tiny.gguf
	$(BUILD)/bin/glm5-gguf inspect $(BUILD)/demo/glm5-tiny.gguf --no-tensors
	$(BUILD)/bin/glm5c compile $(BUILD)/demo/glm5-tiny.gguf --target host -o $(BUILD)/demo/glm5-tiny.plan
	$(BUILD)/bin/glm5c inspect $(BUILD)/demo/glm5-tiny.plan
	$(BUILD)/bin/glm5-run $(BUILD)/demo/glm5-tiny.plan --weights $(BUILD)/demo/glm5-tiny.gguf -p "The lighthouse keeper" -n 32

check: build
	@python3 test/run_tests.py --build-dir $(BUILD)
