// GLM-5 fixture GGUF files: presets (tiny, full-shape, width), quantization mixes, and the writer
// that fills every tensor of the glm-dsa layout from the portable seeded generator (docs/fixtures.md).
#pragma once

#include "runtime/gguf/ggml_types.h"
#include "runtime/gguf/glm5_layout.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace glm5c::fixture {

enum class QuantMix { F32, BF16, Q8_0, Mixed };

struct Preset {
  std::string name;
  std::string description;
  glm5rt::gguf::Glm5Config config;
  uint32_t vocabMerges = 400; // BPE merges learned for the tokenizer
  bool sparse = false;        // tensor data left as holes (reads as zeros)
  QuantMix defaultMix = QuantMix::F32;
};

// The named presets, each with every dimension set.
const std::vector<Preset> &presets();
const Preset *findPreset(const std::string &name);

std::optional<QuantMix> parseQuantMix(const std::string &name);
const char *quantMixName(QuantMix mix);

// The ggml type a tensor gets under a mix; when its ne[0] is not a whole number of the chosen
// type's blocks it falls back as llama.cpp's quantizer does (Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0).
glm5rt::gguf::GgmlType tensorType(const glm5rt::gguf::ExpectedTensor &t, QuantMix mix);

struct MakeOptions {
  std::string preset = "tiny";
  uint64_t seed = 1;
  std::optional<QuantMix> mix;        // default: the preset's
  std::optional<uint32_t> layers;     // main layers (keeps at most `layers` leading dense ones)
  std::optional<uint32_t> nextn;      // MTP blocks after the main layers (default: the preset's)
  uint32_t shards = 1;
  uint32_t threads = 0;               // 0: hardware concurrency
  std::string output;
};

// Writes the fixture; `log` receives one progress line per phase.
glm5rt::Status makeFixture(const MakeOptions &options, void (*log)(const std::string &));

} // namespace glm5c::fixture
