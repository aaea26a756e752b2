// GPU kernel tests: every kernel family against its host reference (runtime/host) on random
// data, outputs poisoned first, for the tile configurations of each target compiled for the
// device's arch (SM120 tiles run on Hopper as sm_90 code). Without a GPU, --compile-only
// compiles every instantiation with NVRTC for every target and prints ptxas' resource lines.
//
// A family adds one file with GPU_TEST(name) { ... } bodies; see sparse_mla_test.cpp.
#pragma once

#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/target/Target.h"
#include "runtime/cuda/Driver.h"
#include "runtime/support/half.h"
#include "runtime/support/status.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace glm5c::gputest {

namespace cu = glm5rt::cuda;

// Relative error ||got - ref|| / ||ref||; any NaN or Inf in `got` (an unwritten poisoned output)
// makes it infinite.
double relErr(const std::vector<float> &got, const std::vector<float> &ref);

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float uniform() { return static_cast<float>(next() >> 40) / 16777216.0f * 2.f - 1.f; } // [-1,1)
  std::vector<float> vec(size_t n, float scale = 1.f) {
    std::vector<float> v(n);
    for (float &x : v)
      x = uniform() * scale;
    return v;
  }
};

// bf16 rounding of a float vector, as the device sees it (and as the reference must use).
std::vector<uint16_t> toBf16(const std::vector<float> &v);
std::vector<float> fromBf16(const std::vector<uint16_t> &v);

class Reporter {
public:
  // Records a comparison; prints one line.
  void expectRelErr(const std::string &what, double err, double bound);
  void fail(const std::string &what, const std::string &why);
  int passed = 0, failed = 0;
};

class Context {
public:
  const codegen::Target &tiles; // the tile configuration under test
  std::string codeArch;         // the NVRTC arch the kernels are compiled for
  bool compileOnly;
  std::string dumpPtxDir; // --dump-ptx: every instantiation's PTX, numbered in build order
  cu::Driver *drv;              // null in compile-only mode
  cu::Stream stream = nullptr;

  Context(const codegen::Target &t, std::string arch, bool compile, cu::Driver *d,
          const codegen::NvrtcCompiler &nvrtc)
      : tiles(t), codeArch(std::move(arch)), compileOnly(compile), drv(d), nvrtc_(nvrtc) {}

  // Compiles `source` (constants + #include of a template) and, with a GPU, loads it. Prints the
  // ptxas resource lines. In compile-only mode the module is null.
  glm5rt::StatusOr<cu::Module> build(const std::string &name, const std::string &source);
  glm5rt::StatusOr<cu::Function> function(cu::Module m, const char *entry, int dynamicSmem = 0);

  // Device buffers, freed when the context is reset between tests.
  cu::DevicePtr alloc(size_t bytes, bool poison = true);
  template <typename T> cu::DevicePtr upload(const std::vector<T> &v) {
    cu::DevicePtr p = alloc(v.size() * sizeof(T), false);
    check(drv->copyToDevice(p, v.data(), v.size() * sizeof(T)));
    return p;
  }
  template <typename T> std::vector<T> download(cu::DevicePtr p, size_t n) {
    std::vector<T> v(n);
    check(drv->synchronize(stream));
    check(drv->copyToHost(v.data(), p, n * sizeof(T)));
    return v;
  }
  // Launches with kernel arguments given by address (the driver API's kernelParams).
  template <typename... Args>
  void launch(cu::Function f, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
              unsigned smem, Args *...args) {
    void *params[] = {static_cast<void *>(args)...};
    check(drv->launch(f, gx, gy, gz, threads, 1, 1, smem, stream, params, "test launch"));
  }
  // The same in thread-block clusters of clusterX CTAs along x.
  template <typename... Args>
  void launchClustered(cu::Function f, unsigned gx, unsigned gy, unsigned clusterX,
                       unsigned threads, unsigned smem, Args *...args) {
    void *params[] = {static_cast<void *>(args)...};
    check(drv->launchClustered(f, gx, gy, 1, threads, clusterX, smem, stream, params,
                               "test launch"));
  }
  void freeAll();
  // Exits the test binary on a driver error (a broken context makes later results meaningless).
  static void check(const glm5rt::Status &s);

private:
  const codegen::NvrtcCompiler &nvrtc_;
  int dumped_ = 0; // instantiations dumped so far (--dump-ptx)
  std::vector<cu::DevicePtr> buffers_;
};

// Activations as the device holds them (bf16 or f32) and as the reference reads them (the
// bf16-rounded values when the device holds bf16).
struct Acts {
  std::vector<float> ref;
  cu::DevicePtr dev = 0;
};
Acts makeActs(Context &ctx, Rng &rng, size_t n, bool f32);
// Activations of the given values (rounded to bf16 unless f32; ref holds what was uploaded).
Acts actsFrom(Context &ctx, std::vector<float> values, bool f32);

// Output buffer of n activations followed by a guard of 64 poisoned ones.
cu::DevicePtr allocOut(Context &ctx, size_t n, bool f32);
// The n outputs as floats; *guardOk tells whether the guard behind them is still poisoned.
std::vector<float> downloadOut(Context &ctx, cu::DevicePtr p, size_t n, bool f32, bool *guardOk);

// A stand-in for a kernel that writes another kernel's input late, for tests of what a kernel
// may read before its grid chain's wait: late_writer lets its successor in at once (as the
// elementwise kernels do), waits delay_ns, then copies `rows` rows of row_bytes from src (packed)
// to dst rows slots[0 .. rows). Launch it plain, then the kernel under test with
// Driver::launchOverlapped: an input read before that kernel's wait holds dst's old rows.
glm5rt::StatusOr<cu::Function> lateWriter(Context &ctx); // null in compile-only mode
void launchLateWriter(Context &ctx, cu::Function writer, cu::DevicePtr src, cu::DevicePtr dst,
                      cu::DevicePtr slots, int rows, int rowBytes, unsigned long long delayNs);

using TestFn = void (*)(Context &, Reporter &);
struct Registrar {
  Registrar(const char *name, TestFn fn);
};
struct RegisteredTest {
  const char *name;
  TestFn fn;
};
std::vector<RegisteredTest> &registry();

#define GPU_TEST(name)                                                                             \
  static void name(::glm5c::gputest::Context &, ::glm5c::gputest::Reporter &);                    \
  static ::glm5c::gputest::Registrar registrar_##name(#name, name);                                \
  static void name(::glm5c::gputest::Context &ctx, ::glm5c::gputest::Reporter &report)

// Unwraps a StatusOr in a test: a compile failure is reported and the test returns.
#define GPU_TRY(var, expr)                                                                         \
  auto var##_or = (expr);                                                                          \
  if (!var##_or.isOk()) {                                                                          \
    report.fail(#expr, var##_or.status().message());                                               \
    return;                                                                                        \
  }                                                                                                \
  auto var = *var##_or

} // namespace glm5c::gputest
