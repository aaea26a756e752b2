// NPY 1.0 writer (see Npy.h): magic, version, a header dict padded so the data starts at a
// multiple of 64 bytes, then the raw little-endian floats.
#include "runtime/cli/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace glm5rt::cli {

Status writeNpyF32(const std::string &path, const std::vector<float> &data, int64_t rows,
                   int64_t cols) {
  if (static_cast<int64_t>(data.size()) != rows * cols)
    return makeStatus(StatusCode::kInternal, "npy: %zu values for shape (%lld, %lld)",
                      data.size(), static_cast<long long>(rows), static_cast<long long>(cols));
  std::string header = strFormat("{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                                 static_cast<long long>(rows), static_cast<long long>(cols));
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return makeStatus(StatusCode::kIoError, "%s: cannot create: %s", path.c_str(),
                      std::strerror(errno));
  uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return makeStatus(StatusCode::kIoError, "%s: write failed", path.c_str());
  return Status::ok();
}

} // namespace glm5rt::cli
