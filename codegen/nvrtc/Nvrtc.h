// NVRTC driver: compiles kernel instantiations (CUDA C++ source + constants) to PTX and cubin,
// distinct instantiations in parallel, with an on-disk cache keyed by a hash of the source, the
// headers, the options and the NVRTC version. A failed compile surfaces NVRTC's log with the
// kernel's name.
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glm5c::codegen {

struct KernelSource {
  std::string name;                                         // for messages and the cache
  std::string source;                                       // the translation unit
  std::vector<std::pair<std::string, std::string>> headers; // name -> text, for #include
  std::string arch;                                         // "sm_120a", "sm_90"
  std::vector<std::string> options;                         // extra NVRTC options
};

struct CompiledKernel {
  std::string ptx;
  std::vector<uint8_t> cubin;
  std::string log; // NVRTC's log: ptxas resource lines (-Xptxas=-v)
  bool fromCache = false;
};

// NVRTC's version as "13.0", or an error if NVRTC cannot be loaded.
glm5rt::StatusOr<std::string> nvrtcVersionString();

class NvrtcCompiler {
public:
  // `cacheDir` empty: no disk cache.
  explicit NvrtcCompiler(std::string cacheDir) : cacheDir_(std::move(cacheDir)) {}

  glm5rt::StatusOr<CompiledKernel> compile(const KernelSource &kernel) const;
  // Compiles every kernel, identical ones once, on up to `threads` threads (0: hardware).
  std::vector<glm5rt::StatusOr<CompiledKernel>> compileAll(const std::vector<KernelSource> &kernels,
                                                           unsigned threads) const;
  // The cache key of a kernel: hex of a 128-bit hash over everything that affects the output.
  std::string cacheKey(const KernelSource &kernel, const std::string &nvrtcVersion) const;

  // The default cache directory: $GLM5C_CACHE_DIR, else $XDG_CACHE_HOME/glm5c, else
  // $HOME/.cache/glm5c; empty when none is set.
  static std::string defaultCacheDir();

private:
  std::string cacheDir_;
};

} // namespace glm5c::codegen
