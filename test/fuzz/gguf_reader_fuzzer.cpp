// libFuzzer target for the GGUF reader: any byte string must yield a file or a Status, never a
// crash, hang, leak or out-of-bounds read. Accepted inputs are also walked the way inspect walks
// them (metadata rendering, GLM-5 checks, dequantizing each tensor's first row).
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/glm5_layout.h"
#include "runtime/gguf/quant.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace glm5rt::gguf;
  auto file = GgufFile::openMemory("fuzz.gguf", data, size);
  if (!file.isOk())
    return 0;
  const GgufFile &f = **file;
  for (const KeyValue &kv : f.metadata())
    (void)kv.value.toString();
  auto config = readGlm5Config(f);
  if (config.isOk()) {
    Glm5Config c = *config;
    // Keep the expected-tensor list small: a fuzzed block_count must not dominate the run.
    if (c.blockCount < 64)
      (void)checkGlm5Tensors(f, c);
  }
  std::vector<float> row;
  for (const TensorInfo &t : f.tensors()) {
    if (!canDequantize(t.type) || t.ne[0] == 0 || t.ne[0] > (1u << 16))
      continue;
    row.resize(t.ne[0]);
    uint64_t rowBytes = *ggmlRowBytes(t.type, t.ne[0]);
    if (rowBytes <= t.bytes)
      (void)dequantizeRow(t.type, t.data, rowBytes, row.data(), t.ne[0]);
  }
  return 0;
}
