// glm5-gguf: GLM-5 GGUF fixtures, inspection and dequantization, without LLVM (it runs wherever
// the runtime builds). A thin command-line layer over tools/glm5-gguf's library.
#include "runtime/cli/Args.h"
#include "tools/glm5-gguf/fixture.h"
#include "tools/glm5-gguf/inspect.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using glm5rt::Status;

const char *kUsage =
    "usage:\n"
    "  glm5-gguf make [--preset NAME] [--seed N] [--quant-mix f32|bf16|q8_0|mixed]\n"
    "                 [--layers N] [--nextn N] [--split N] [--threads N] -o FILE.gguf\n"
    "  glm5-gguf inspect FILE.gguf [--no-tensors] [--tensor NAME [--rows A:B]]\n"
    "  glm5-gguf dequant FILE.gguf -o F32.gguf [--threads N]\n"
    "  glm5-gguf presets\n";

int usage(const char *why) {
  if (why)
    std::fprintf(stderr, "glm5-gguf: %s\n", why);
  std::fputs(kUsage, stderr);
  return 2;
}

int fail(const Status &s) {
  std::fprintf(stderr, "glm5-gguf: error: %s\n", s.message().c_str());
  return 1;
}

bool parseU64(const char *s, uint64_t *out) {
  return glm5rt::cli::parseUnsigned(s, UINT64_MAX, out);
}

bool parseU32(const char *s, uint32_t *out) {
  uint64_t v;
  if (!glm5rt::cli::parseUnsigned(s, UINT32_MAX, &v))
    return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

void logLine(const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); }

int cmdMake(std::vector<char *> args) {
  glm5c::fixture::MakeOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    const char *v = i + 1 < args.size() ? args[i + 1] : nullptr;
    auto needs = [&]() -> bool { return v != nullptr; };
    uint32_t u32;
    if (a == "--preset" && needs()) {
      opt.preset = v;
    } else if (a == "--seed" && needs()) {
      if (!parseU64(v, &opt.seed))
        return usage("--seed takes a non-negative integer");
    } else if (a == "--quant-mix" && needs()) {
      opt.mix = glm5c::fixture::parseQuantMix(v);
      if (!opt.mix)
        return usage("--quant-mix takes f32, bf16, q8_0 or mixed");
    } else if (a == "--layers" && needs()) {
      if (!parseU32(v, &u32) || u32 == 0 || u32 > 1000)
        return usage("--layers takes an integer in 1..1000");
      opt.layers = u32;
    } else if (a == "--nextn" && needs()) {
      if (!parseU32(v, &u32) || u32 > 8)
        return usage("--nextn takes an integer in 0..8");
      opt.nextn = u32;
    } else if (a == "--split" && needs()) {
      if (!parseU32(v, &opt.shards) || opt.shards == 0 || opt.shards > 9999)
        return usage("--split takes an integer in 1..9999");
    } else if (a == "--threads" && needs()) {
      if (!parseU32(v, &opt.threads) || opt.threads > 1024)
        return usage("--threads takes an integer in 0..1024");
    } else if (a == "-o" && needs()) {
      opt.output = v;
    } else {
      return usage(("make: unexpected argument '" + a + "'").c_str());
    }
    ++i;
  }
  if (opt.output.empty())
    return usage("make needs -o FILE.gguf");
  Status s = glm5c::fixture::makeFixture(opt, logLine);
  return s.isOk() ? 0 : fail(s);
}

int cmdInspect(std::vector<char *> args) {
  glm5c::gguftool::InspectOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    const char *v = i + 1 < args.size() ? args[i + 1] : nullptr;
    if (a == "--tensor" && v) {
      opt.tensor = v;
      ++i;
    } else if (a == "--rows" && v) {
      std::string r = v;
      size_t colon = r.find(':');
      uint64_t b = 0, e = 0;
      if (colon == std::string::npos || !parseU64(r.substr(0, colon).c_str(), &b) ||
          !parseU64(r.substr(colon + 1).c_str(), &e) || e <= b)
        return usage("--rows takes A:B with A < B");
      opt.rowBegin = b;
      opt.rowEnd = e;
      ++i;
    } else if (a == "--no-tensors") {
      opt.tensorsTable = false;
    } else if (opt.path.empty() && a[0] != '-') {
      opt.path = a;
    } else {
      return usage(("inspect: unexpected argument '" + a + "'").c_str());
    }
  }
  if (opt.path.empty())
    return usage("inspect needs a FILE.gguf");
  if (opt.tensor.empty() && opt.rowEnd)
    return usage("--rows needs --tensor");
  Status s = glm5c::gguftool::inspect(opt, stdout);
  std::fflush(stdout);
  return s.isOk() ? 0 : fail(s);
}

int cmdDequant(std::vector<char *> args) {
  std::string in, out;
  uint32_t threads = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    const char *v = i + 1 < args.size() ? args[i + 1] : nullptr;
    if (a == "-o" && v) {
      out = v;
      ++i;
    } else if (a == "--threads" && v) {
      if (!parseU32(v, &threads) || threads > 1024)
        return usage("--threads takes an integer in 0..1024");
      ++i;
    } else if (in.empty() && a[0] != '-') {
      in = a;
    } else {
      return usage(("dequant: unexpected argument '" + a + "'").c_str());
    }
  }
  if (in.empty() || out.empty())
    return usage("dequant needs FILE.gguf and -o F32.gguf");
  if (in == out)
    return usage("dequant: the output must differ from the input");
  Status s = glm5c::gguftool::dequantToF32(in, out, threads);
  return s.isOk() ? 0 : fail(s);
}

int cmdPresets() {
  for (const glm5c::fixture::Preset &p : glm5c::fixture::presets())
    std::printf("%-10s %s (default mix %s)\n", p.name.c_str(), p.description.c_str(),
                glm5c::fixture::quantMixName(p.defaultMix));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage(nullptr);
  std::string cmd = argv[1];
  std::vector<char *> rest(argv + 2, argv + argc);
  if (cmd == "make")
    return cmdMake(rest);
  if (cmd == "inspect")
    return cmdInspect(rest);
  if (cmd == "dequant")
    return cmdDequant(rest);
  if (cmd == "presets")
    return cmdPresets();
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usage(("unknown command '" + cmd + "'").c_str());
}
