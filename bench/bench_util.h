// Shared pieces of the GPU benchmarks: fatal status checks, the random data generator, list
// parsing, and CUDA-graph timing (median of replays, inputs rotated over several sets).
#pragma once

#include "codegen/kernels/EmbeddedKernels.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "codegen/target/Target.h"
#include "runtime/cli/Args.h"
#include "runtime/cuda/Driver.h"
#include "runtime/support/status.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace glm5c::bench {

// A benchmark cannot continue after a driver error: report it and exit.
inline void checkOk(const glm5rt::Status &s) {
  if (!s.isOk()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    std::exit(1);
  }
}

// Kept as a macro so call sites read like the rest of the benchmarks.
#define CHECK_OK(expr) ::glm5c::bench::checkOk(expr)

// Opens device 0 (exiting on error), prints its line and returns the driver; *codeArch is the
// device's own arch ("sm_90" on an H200), the NVRTC arch the benchmarks compile for.
inline glm5rt::cuda::Driver &openDevice(std::string *codeArch) {
  auto drv = glm5rt::cuda::Driver::get(0);
  checkOk(drv.status());
  const glm5rt::cuda::DeviceInfo &dev = (*drv)->info();
  *codeArch = "sm_" + std::to_string(dev.major * 10 + dev.minor);
  std::printf("device: %s (%s, %d SMs, %d B shared memory per block)\n", dev.name.c_str(),
              codeArch->c_str(), dev.smCount, dev.maxSharedOptin);
  return **drv;
}

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float uniform() { return static_cast<float>(next() >> 40) / 16777216.0f * 2.f - 1.f; }
};

// "a,b,c" -> {"a", "b", "c"}.
inline std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> v;
  for (size_t p = 0; p <= list.size();) {
    size_t c = list.find(',', p);
    v.push_back(list.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos)
      break;
    p = c + 1;
  }
  return v;
}

// An integer option's value, read strictly (runtime/cli parseUnsigned: digits only, the whole
// text) and within [lo, hi]; anything else ends the bench with a message naming the option, so a
// typo ("--reps 2x", "--splits -1") is not timed as some other configuration.
inline int optionInt(const char *option, const std::string &text, int lo, int hi) {
  uint64_t v = 0;
  if (!glm5rt::cli::parseUnsigned(text.c_str(), static_cast<uint64_t>(lo),
                                  static_cast<uint64_t>(hi), &v)) {
    std::fprintf(stderr, "%s: '%s' is not an integer from %d to %d\n", option, text.c_str(), lo,
                 hi);
    std::exit(2);
  }
  return static_cast<int>(v);
}
// A comma-separated list of such values.
inline std::vector<int> optionInts(const char *option, const std::string &list, int lo, int hi) {
  std::vector<int> v;
  for (const std::string &t : splitList(list))
    v.push_back(optionInt(option, t, lo, hi));
  return v;
}

// The tile target named on a bench's command line, or null after saying which names exist.
inline const glm5c::codegen::Target *findTileTarget(const std::string &name) {
  const glm5c::codegen::Target *t = glm5c::codegen::findTarget(name);
  if (!t)
    std::fprintf(stderr, "unknown tile target %s (known: %s)\n", name.c_str(),
                 glm5c::codegen::targetNames().c_str());
  return t;
}

// `#define NAME V` (V = 1 when absent) for a bench's --define NAME[=V]: the benchmarks put these
// lines before a kernel's generated source to time a template's alternatives (experiments).
inline std::string defineLine(const std::string &d) {
  const size_t eq = d.find('=');
  if (eq == std::string::npos)
    return "#define " + d + " 1\n";
  return "#define " + d.substr(0, eq) + " " + d.substr(eq + 1) + "\n";
}

// --sm120-occupancy (the qlinear and MoE benches): a kernel of `dynamicSmem` bytes runs as many
// CTAs per SM as the tile target's shared memory holds (returned), by launching it with at least
// *launchSmem bytes: enough that no more share this device's SM (its opt-in maximum plus the 1 KB
// the system reserves per CTA). The kernel is opted in to the padded size.
inline int padToTileOccupancy(glm5rt::cuda::Driver &drv, glm5rt::cuda::Function f,
                              const glm5c::codegen::Target &tiles, int64_t dynamicSmem,
                              const std::string &name, int64_t *launchSmem) {
  const int64_t per = std::max<int64_t>(1, tiles.sharedPerSM / (dynamicSmem + 1024));
  *launchSmem = std::max<int64_t>(
      dynamicSmem, (int64_t(drv.info().maxSharedOptin) + 1024) / (per + 1) - 1024 + 64);
  if (*launchSmem > 48 * 1024)
    checkOk(drv.setMaxDynamicSmem(f, static_cast<int>(*launchSmem), name));
  return static_cast<int>(per);
}

// Compiles a generated kernel source (the kernel library's headers available) for `arch`,
// loads it, returns entry `entry` opted in to `dynamicSmem` bytes of shared memory, and prints
// `name` with ptxas's register line. With `auxEntry`, *aux is that entry of the same module (a
// traced build's dump kernel).
inline glm5rt::cuda::Function buildKernel(glm5rt::cuda::Driver &drv,
                                          glm5c::codegen::NvrtcCompiler &nvrtc,
                                          const std::string &name, const std::string &source,
                                          const std::string &arch, const std::string &entry,
                                          int64_t dynamicSmem, const char *auxEntry = nullptr,
                                          glm5rt::cuda::Function *aux = nullptr) {
  glm5c::codegen::KernelSource src;
  src.name = name;
  src.source = source;
  src.headers = glm5c::codegen::embeddedKernelFiles();
  src.arch = arch;
  auto compiled = nvrtc.compile(src);
  checkOk(compiled.status());
  glm5rt::cuda::Module mod;
  checkOk(drv.loadModule(compiled->cubin.data(), &mod, name));
  glm5rt::cuda::Function f;
  checkOk(drv.getFunction(mod, entry.c_str(), &f));
  if (auxEntry)
    checkOk(drv.getFunction(mod, auxEntry, aux));
  if (dynamicSmem > 48 * 1024)
    checkOk(drv.setMaxDynamicSmem(f, static_cast<int>(dynamicSmem), name));
  const size_t p = compiled->log.find("Used");
  std::printf(
      "%s: %lld B dynamic shared memory; %s\n", name.c_str(), static_cast<long long>(dynamicSmem),
      p == std::string::npos ? ""
                             : compiled->log.substr(p, compiled->log.find('\n', p) - p).c_str());
  return f;
}

// Captures launch(i) for every input set i in one CUDA graph, replays it (3 warm-ups, then
// `reps` timed replays with device events) and returns the median microseconds per set.
template <typename Launch>
double timeGraph(glm5rt::cuda::Driver &drv, glm5rt::cuda::Stream stream, size_t sets, int reps,
                 Launch launch) {
  namespace cu = glm5rt::cuda;
  checkOk(drv.beginCapture(stream));
  for (size_t i = 0; i < sets; ++i)
    launch(i);
  cu::Graph graph;
  cu::GraphExec exec;
  checkOk(drv.endCapture(stream, &graph));
  checkOk(drv.instantiate(&exec, graph));
  cu::Event e0, e1;
  checkOk(drv.eventCreate(&e0));
  checkOk(drv.eventCreate(&e1));
  for (int w = 0; w < 3; ++w)
    checkOk(drv.graphLaunch(exec, stream));
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    checkOk(drv.eventRecord(e0, stream));
    checkOk(drv.graphLaunch(exec, stream));
    checkOk(drv.eventRecord(e1, stream));
    checkOk(drv.synchronize(stream));
    float ms;
    checkOk(drv.eventElapsedMs(&ms, e0, e1));
    times.push_back(ms * 1000.f / static_cast<float>(sets));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace glm5c::bench
