// Runner of the GPU kernel tests (see gpu_test.h).
// usage: glm5c-gpu-tests [--compile-only] [--tiles sm_120a,sm_90] [--filter SUBSTRING]
//                        [--dump-ptx DIR]
// --dump-ptx writes each instantiation's PTX to DIR/<tiles>-<NNNN>-<name>.ptx (NNNN: build
// order). Two dumps of a kernel refactor compared with test/gpu/ptx_diff.py show whether the
// refactor changed any generated code -- a check that needs no GPU.
#include "test/gpu/gpu_test.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace glm5c::gputest {

std::vector<RegisteredTest> &registry() {
  static std::vector<RegisteredTest> tests;
  return tests;
}

Registrar::Registrar(const char *name, TestFn fn) { registry().push_back({name, fn}); }

double relErr(const std::vector<float> &got, const std::vector<float> &ref) {
  if (got.size() != ref.size())
    return INFINITY;
  double e = 0, r = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]))
      return INFINITY;
    double d = double(got[i]) - ref[i];
    e += d * d;
    r += double(ref[i]) * ref[i];
  }
  return r > 0 ? std::sqrt(e / r) : std::sqrt(e);
}

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    o[i] = glm5rt::floatToBf16(v[i]);
  return o;
}

std::vector<float> fromBf16(const std::vector<uint16_t> &v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    o[i] = glm5rt::bf16ToFloat(v[i]);
  return o;
}

Acts makeActs(Context &ctx, Rng &rng, size_t n, bool f32) { return actsFrom(ctx, rng.vec(n), f32); }

Acts actsFrom(Context &ctx, std::vector<float> values, bool f32) {
  Acts a;
  a.ref = std::move(values);
  if (f32) {
    a.dev = ctx.upload(a.ref);
  } else {
    std::vector<uint16_t> h = toBf16(a.ref);
    a.ref = fromBf16(h);
    a.dev = ctx.upload(h);
  }
  return a;
}

cu::DevicePtr allocOut(Context &ctx, size_t n, bool f32) {
  return ctx.alloc((n + 64) * (f32 ? 4 : 2));
}

std::vector<float> downloadOut(Context &ctx, cu::DevicePtr p, size_t n, bool f32, bool *guardOk) {
  std::vector<float> v;
  if (f32) {
    std::vector<uint32_t> raw = ctx.download<uint32_t>(p, n + 64);
    *guardOk = std::all_of(raw.begin() + n, raw.end(), [](uint32_t b) { return b == ~0u; });
    v.resize(n);
    std::memcpy(v.data(), raw.data(), n * 4);
  } else {
    std::vector<uint16_t> raw = ctx.download<uint16_t>(p, n + 64);
    *guardOk = std::all_of(raw.begin() + n, raw.end(), [](uint16_t b) { return b == 0xffff; });
    v = fromBf16(std::vector<uint16_t>(raw.begin(), raw.begin() + n));
  }
  return v;
}

namespace {
const char *kLateWriter = R"(
extern "C" __global__ void late_writer(const unsigned char *src, unsigned char *dst,
                                       const int *slots, int rows, int row_bytes,
                                       unsigned long long delay_ns) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < delay_ns);
  for (int i = threadIdx.x; i < rows * row_bytes; i += blockDim.x)
    dst[static_cast<long long>(slots[i / row_bytes]) * row_bytes + i % row_bytes] = src[i];
}
)";
} // namespace

glm5rt::StatusOr<cu::Function> lateWriter(Context &ctx) {
  auto mod = ctx.build("late_writer", kLateWriter);
  if (!mod.isOk())
    return mod.status();
  if (ctx.compileOnly)
    return cu::Function(nullptr);
  return ctx.function(*mod, "late_writer");
}

void launchLateWriter(Context &ctx, cu::Function writer, cu::DevicePtr src, cu::DevicePtr dst,
                      cu::DevicePtr slots, int rows, int rowBytes, unsigned long long delayNs) {
  ctx.launch(writer, 1, 1, 1, 256, 0, &src, &dst, &slots, &rows, &rowBytes, &delayNs);
}

void Reporter::expectRelErr(const std::string &what, double err, double bound) {
  bool ok = err <= bound;
  (ok ? passed : failed)++;
  std::printf("  %-64s rel err %.2e (bound %.0e) %s\n", what.c_str(), err, bound,
              ok ? "ok" : "FAILED");
}

void Reporter::fail(const std::string &what, const std::string &why) {
  failed++;
  std::printf("  %-64s FAILED: %s\n", what.c_str(), why.c_str());
}

void Context::check(const glm5rt::Status &s) {
  if (!s.isOk()) {
    std::fprintf(stderr, "fatal: %s\n", s.message().c_str());
    std::exit(2);
  }
}

glm5rt::StatusOr<cu::Module> Context::build(const std::string &name, const std::string &source) {
  codegen::KernelSource src;
  src.name = name;
  src.source = source;
  src.headers = codegen::embeddedKernelFiles();
  src.arch = codeArch;
  auto compiled = nvrtc_.compile(src);
  if (!compiled.isOk())
    return compiled.status();
  // ptxas' per-entry lines: the entry, its spills, its registers and shared memory.
  std::string res, line;
  for (size_t p = 0; p < compiled->log.size(); p += line.size() + 1) {
    line = compiled->log.substr(p, compiled->log.find('\n', p) - p);
    if (line.find("Compiling entry") != std::string::npos ||
        line.find("spill stores") != std::string::npos || line.find("Used") != std::string::npos)
      res += "    " + line + "\n";
  }
  std::printf("  [%s for %s%s]\n%s", name.c_str(), codeArch.c_str(),
              compiled->fromCache ? ", cached" : "", res.c_str());
  if (!dumpPtxDir.empty()) {
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%04d-", dumped_++);
    const std::string path =
        dumpPtxDir + "/" + tiles.name + "-" + prefix + name + "-" + codeArch + ".ptx";
    if (FILE *f = std::fopen(path.c_str(), "w")) {
      std::fwrite(compiled->ptx.data(), 1, compiled->ptx.size(), f);
      std::fclose(f);
    } else {
      return glm5rt::makeStatus(glm5rt::StatusCode::kNotFound, "cannot write %s", path.c_str());
    }
  }
  if (compileOnly)
    return static_cast<cu::Module>(nullptr);
  cu::Module m;
  GLM5_RETURN_IF_ERROR(drv->loadModule(compiled->cubin.data(), &m, name));
  return m;
}

glm5rt::StatusOr<cu::Function> Context::function(cu::Module m, const char *entry, int smem) {
  cu::Function f;
  GLM5_RETURN_IF_ERROR(drv->getFunction(m, entry, &f));
  if (smem > 48 * 1024)
    GLM5_RETURN_IF_ERROR(drv->setMaxDynamicSmem(f, smem, entry));
  return f;
}

cu::DevicePtr Context::alloc(size_t bytes, bool poison) {
  cu::DevicePtr p = 0;
  check(drv->malloc(&p, bytes ? bytes : 4, "test buffer"));
  if (poison)
    check(drv->memsetD8(p, 0xff, bytes)); // all-ones bytes: NaN as f32 and bf16
  buffers_.push_back(p);
  return p;
}

void Context::freeAll() {
  if (drv)
    for (cu::DevicePtr p : buffers_)
      (void)drv->free(p);
  buffers_.clear();
}

} // namespace glm5c::gputest

using namespace glm5c::gputest;

int main(int argc, char **argv) {
  bool compileOnly = false;
  std::string filter, dumpPtx;
  std::vector<std::string> tileNames;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--compile-only")
      compileOnly = true;
    else if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--dump-ptx" && i + 1 < argc)
      dumpPtx = argv[++i];
    else if (a == "--tiles" && i + 1 < argc) {
      std::string list = argv[++i];
      size_t p = 0;
      while (p <= list.size()) {
        size_t c = list.find(',', p);
        tileNames.push_back(list.substr(p, c == std::string::npos ? std::string::npos : c - p));
        if (c == std::string::npos)
          break;
        p = c + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--compile-only] [--tiles T,...] [--filter SUBSTRING] "
                   "[--dump-ptx DIR]\n",
                   argv[0]);
      return 2;
    }
  }
  cu::Driver *drv = nullptr;
  std::vector<std::pair<const glm5c::codegen::Target *, std::string>> configs; // tiles, code arch
  if (!compileOnly) {
    auto d = cu::Driver::get(0);
    if (!d.isOk()) {
      std::fprintf(stderr, "glm5c-gpu-tests: %s\n", d.status().message().c_str());
      return 2;
    }
    drv = *d;
    const cu::DeviceInfo &info = drv->info();
    std::string arch = "sm_" + std::to_string(info.major * 10 + info.minor);
    std::printf("device: %s (%s)\n", info.name.c_str(), arch.c_str());
    if (tileNames.empty())
      tileNames = {"sm_120a", arch};
    for (const std::string &t : tileNames)
      if (const auto *target = glm5c::codegen::findTarget(t))
        configs.push_back({target, arch});
  } else {
    if (tileNames.empty())
      tileNames = {"sm_120a", "sm_90"};
    for (const std::string &t : tileNames)
      if (const auto *target = glm5c::codegen::findTarget(t))
        configs.push_back({target, target->name});
  }
  if (configs.size() != tileNames.size()) {
    std::fprintf(stderr, "unknown tile target (known: %s)\n",
                 glm5c::codegen::targetNames().c_str());
    return 2;
  }
  glm5c::codegen::NvrtcCompiler nvrtc(glm5c::codegen::NvrtcCompiler::defaultCacheDir());
  Reporter report;
  for (auto &[tiles, arch] : configs) {
    Context ctx(*tiles, arch, compileOnly, drv, nvrtc);
    ctx.dumpPtxDir = dumpPtx;
    if (drv)
      Context::check(drv->streamCreate(&ctx.stream));
    for (const RegisteredTest &t : registry()) {
      if (!filter.empty() && std::string(t.name).find(filter) == std::string::npos)
        continue;
      std::printf("%s [%s tiles, %s code]\n", t.name, tiles->name, arch.c_str());
      t.fn(ctx, report);
      ctx.freeAll();
    }
  }
  std::printf("glm5c gpu tests: %d passed, %d failed\n", report.passed, report.failed);
  return report.failed ? 1 : 0;
}
