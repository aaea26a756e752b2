// Memory-mapped files: read-only views of model files and writable mappings for files we create.
//
// The mapping is the only copy of tensor data the host holds; a 400 GB model is never read into
// heap memory. Pages are loaded lazily, so opening a file touches only what is read.
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace glm5rt {

class MappedFile {
public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  // Maps `path` read-only. An empty file maps to size 0 and a null data pointer.
  static StatusOr<std::unique_ptr<MappedFile>> openRead(const std::string &path);
  // Creates (truncating) `path` with `size` bytes mapped read-write. With `reserve`, the disk
  // space is allocated up front so a full disk is an error here rather than a fault while
  // writing; without it, bytes never written stay holes on disk (a sparse file).
  static StatusOr<std::unique_ptr<MappedFile>> createWrite(const std::string &path, uint64_t size,
                                                           bool reserve);

  // A read-only view of bytes the caller owns and keeps alive (fuzzing, tests); nothing is
  // unmapped on close.
  static std::unique_ptr<MappedFile> borrow(const std::string &name, const uint8_t *data,
                                            uint64_t size);

  const uint8_t *data() const { return data_; }
  uint8_t *mutableData() { return writable_ ? data_ : nullptr; }
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }

  // Flushes a writable mapping to disk and releases it; reports write errors (disk full, ...).
  Status close();

private:
  std::string path_;
  uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
  bool writable_ = false;
  bool borrowed_ = false;
};

} // namespace glm5rt
