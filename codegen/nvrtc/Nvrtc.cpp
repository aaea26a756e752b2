// NVRTC compilation with a content-addressed disk cache (see Nvrtc.h).
#include "codegen/nvrtc/Nvrtc.h"

#include "runtime/support/parallel.h"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace glm5c::codegen {

using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::StatusOr;
using glm5rt::makeStatus;

namespace {

uint64_t fnv1a(uint64_t h, const std::string &s) {
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  // Length-delimit each field so ("ab", "c") and ("a", "bc") differ.
  for (int i = 0; i < 8; ++i)
    h = (h ^ ((s.size() >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

bool readFile(const std::string &path, std::string *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// Writes through a temporary and a rename, so a concurrent reader never sees half a file.
void writeFileAtomic(const std::string &path, const std::string &data) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      return;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out)
      return;
  }
  std::rename(tmp.c_str(), path.c_str());
}

void mkdirs(const std::string &dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!cur.empty())
        ::mkdir(cur.c_str(), 0755);
    }
    if (i < dir.size())
      cur += dir[i];
  }
}

// Cache entry: "<ptx size>\n<cubin size>\n<log size>\n" then the three blobs.
std::string serialize(const CompiledKernel &k) {
  std::string s = std::to_string(k.ptx.size()) + "\n" + std::to_string(k.cubin.size()) + "\n" +
                  std::to_string(k.log.size()) + "\n";
  s += k.ptx;
  s.append(reinterpret_cast<const char *>(k.cubin.data()), k.cubin.size());
  s += k.log;
  return s;
}

bool deserialize(const std::string &s, CompiledKernel *k) {
  size_t pos = 0;
  size_t sizes[3];
  for (size_t &n : sizes) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos)
      return false;
    char *end = nullptr;
    n = std::strtoull(s.c_str() + pos, &end, 10);
    if (end != s.c_str() + nl)
      return false;
    pos = nl + 1;
  }
  if (pos + sizes[0] + sizes[1] + sizes[2] != s.size())
    return false;
  k->ptx = s.substr(pos, sizes[0]);
  k->cubin.assign(s.begin() + pos + sizes[0], s.begin() + pos + sizes[0] + sizes[1]);
  k->log = s.substr(pos + sizes[0] + sizes[1]);
  return true;
}

std::string nvrtcLog(nvrtcProgram prog) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1)
    return "";
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(n - 1);
  return log;
}

StatusOr<CompiledKernel> compileUncached(const KernelSource &k) {
  std::vector<const char *> headerText, headerNames;
  for (const auto &h : k.headers) {
    headerNames.push_back(h.first.c_str());
    headerText.push_back(h.second.c_str());
  }
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, k.source.c_str(), (k.name + ".cu").c_str(),
                                     static_cast<int>(headerText.size()), headerText.data(),
                                     headerNames.data());
  if (r != NVRTC_SUCCESS)
    return makeStatus(StatusCode::kInternal, "kernel %s: nvrtcCreateProgram: %s", k.name.c_str(),
                      nvrtcGetErrorString(r));
  // No --use_fast_math: kernels opt into approximate math explicitly (glm_exp2), so the f32
  // validation instantiations stay exact where they need to be.
  std::vector<std::string> opts = {"-arch=" + k.arch, "-std=c++17", "-Xptxas=-v"};
  opts.insert(opts.end(), k.options.begin(), k.options.end());
  std::vector<const char *> optPtrs;
  for (const std::string &o : opts)
    optPtrs.push_back(o.c_str());
  r = nvrtcCompileProgram(prog, static_cast<int>(optPtrs.size()), optPtrs.data());
  CompiledKernel out;
  out.log = nvrtcLog(prog);
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return makeStatus(StatusCode::kInvalidArgument, "kernel %s for %s failed to compile (%s):\n%s",
                      k.name.c_str(), k.arch.c_str(), nvrtcGetErrorString(r), out.log.c_str());
  }
  size_t n = 0;
  if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
    out.ptx.resize(n);
    nvrtcGetPTX(prog, out.ptx.data());
    out.ptx.resize(n - 1); // drop the NUL
  }
  if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
    out.cubin.resize(n);
    nvrtcGetCUBIN(prog, reinterpret_cast<char *>(out.cubin.data()));
  }
  nvrtcDestroyProgram(&prog);
  if (out.ptx.empty() || out.cubin.empty())
    return makeStatus(StatusCode::kInternal, "kernel %s for %s: NVRTC returned no %s",
                      k.name.c_str(), k.arch.c_str(), out.ptx.empty() ? "PTX" : "cubin");
  return out;
}

} // namespace

StatusOr<std::string> nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return makeStatus(StatusCode::kUnimplemented, "NVRTC is not usable");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string NvrtcCompiler::defaultCacheDir() {
  if (const char *d = std::getenv("GLM5C_CACHE_DIR"))
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"))
    return std::string(d) + "/glm5c";
  if (const char *d = std::getenv("HOME"))
    return std::string(d) + "/.cache/glm5c";
  return "";
}

std::string NvrtcCompiler::cacheKey(const KernelSource &k, const std::string &version) const {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  auto mix = [&](const std::string &s) {
    a = fnv1a(a, s);
    b = fnv1a(b ^ 0x9e3779b97f4a7c15ull, s);
  };
  mix("glm5c-kernel-cache-v1");
  mix(version);
  mix(k.source);
  for (const auto &h : k.headers) {
    mix(h.first);
    mix(h.second);
  }
  mix(k.arch);
  for (const std::string &o : k.options)
    mix(o);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

StatusOr<CompiledKernel> NvrtcCompiler::compile(const KernelSource &k) const {
  auto version = nvrtcVersionString();
  if (!version.isOk())
    return version.status();
  std::string path;
  if (!cacheDir_.empty()) {
    path = cacheDir_ + "/kernels/" + cacheKey(k, *version) + ".bin";
    std::string data;
    CompiledKernel cached;
    if (readFile(path, &data) && deserialize(data, &cached)) {
      cached.fromCache = true;
      return cached;
    }
  }
  auto compiled = compileUncached(k);
  if (compiled.isOk() && !path.empty()) {
    mkdirs(cacheDir_ + "/kernels");
    writeFileAtomic(path, serialize(*compiled));
  }
  return compiled;
}

std::vector<StatusOr<CompiledKernel>>
NvrtcCompiler::compileAll(const std::vector<KernelSource> &kernels, unsigned threads) const {
  std::string version = nvrtcVersionString().isOk() ? *nvrtcVersionString() : "";
  std::map<std::string, size_t> firstOf; // key -> index of the kernel compiled for it
  std::vector<size_t> unique, sourceOf(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto [it, inserted] = firstOf.emplace(cacheKey(kernels[i], version), i);
    if (inserted)
      unique.push_back(i);
    sourceOf[i] = it->second;
  }
  std::vector<StatusOr<CompiledKernel>> results(kernels.size(),
                                                Status(StatusCode::kInternal, "not compiled"));
  (void)glm5rt::parallelFor(unique.size(), threads, [&](size_t u) {
    size_t i = unique[u];
    results[i] = compile(kernels[i]);
    return Status::ok(); // per-kernel errors stay in results
  });
  for (size_t i = 0; i < kernels.size(); ++i)
    if (sourceOf[i] != i)
      results[i] = results[sourceOf[i]];
  return results;
}

} // namespace glm5c::codegen
