// Writes GGUF v3 files (optionally split into shards) in llama.cpp's layout: metadata, tensor
// infos, padding to the alignment, then tensor data, each tensor padded to the alignment.
//
// The data section is memory-mapped, so callers fill tensors in place (from several threads, one
// tensor per thread) without holding them in memory; tensors never filled stay holes on disk.
#pragma once

#include "runtime/gguf/ggml_types.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/support/mapped_file.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace glm5rt::gguf {

class GgufWriter {
public:
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  // Metadata, in insertion order. Setting a key twice replaces its value in place.
  void setU8(const std::string &key, uint8_t v);
  void setU16(const std::string &key, uint16_t v);
  void setU32(const std::string &key, uint32_t v);
  void setI32(const std::string &key, int32_t v);
  void setU64(const std::string &key, uint64_t v);
  void setF32(const std::string &key, float v);
  void setBool(const std::string &key, bool v);
  void setString(const std::string &key, const std::string &v);
  void setStringArray(const std::string &key, const std::vector<std::string> &v);
  void setI32Array(const std::string &key, const std::vector<int32_t> &v);
  void setF32Array(const std::string &key, const std::vector<float> &v);
  // Copies a value read from another file (any type, nested arrays included).
  void setValue(const std::string &key, const Value &v);
  bool hasKey(const std::string &key) const;

  // Declares a tensor; data is written after create(). Fails on a bad name, a duplicate, or a
  // shape whose ne[0] is not a whole number of blocks.
  Status addTensor(const std::string &name, GgmlType type, const std::vector<uint64_t> &ne);
  size_t tensorCount() const { return tensors_.size(); }
  uint64_t tensorBytes(size_t i) const { return tensors_[i].bytes; }

  // Lays out and creates the file(s): `path` itself for one shard, else
  // `<path without .gguf>-0000k-of-0000n.gguf`, tensors divided in order. Headers are written;
  // the data sections are mapped for tensorData(). With `sparse`, disk space is not reserved and
  // tensors left unfilled read as zeros.
  Status create(const std::string &path, uint32_t shards = 1, bool sparse = false);
  // Writable bytes of tensor i (tensorBytes(i) long); valid between create() and finish().
  uint8_t *tensorData(size_t i);
  Status finish();
  const std::vector<std::string> &outputPaths() const { return outputPaths_; }

private:
  struct Kv {
    std::string key;
    std::vector<uint8_t> bytes; // value type + value, serialized
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    uint64_t bytes = 0;
    uint32_t shard = 0;
    uint64_t offset = 0; // within its shard's data section
  };
  void setRaw(const std::string &key, std::vector<uint8_t> bytes);

  uint32_t alignment_;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<uint64_t> dataOffsets_;
  std::vector<std::string> outputPaths_;
};

} // namespace glm5rt::gguf
