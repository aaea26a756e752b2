// Plan/device compatibility (see Compatibility.h).
#include "runtime/cuda/Compatibility.h"

#include <cctype>
#include <cstdlib>

namespace glm5rt::cuda {

namespace pl = glm5::plan;

bool parseArch(const std::string &arch, int *capability, bool *archSpecific) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end])))
    ++end;
  if (end == 3 || end - 3 > 3)
    return false;
  const std::string rest = arch.substr(end);
  if (!rest.empty() && rest != "a")
    return false;
  *capability = std::atoi(arch.substr(3, end - 3).c_str());
  *archSpecific = rest == "a";
  return *capability >= 10;
}

namespace {

std::string deviceText(const DeviceInfo &d) {
  return strFormat("%s (compute capability %d.%d)", d.name.c_str(), d.major, d.minor);
}

// What to compile instead, for this device.
std::string suggestion(const DeviceInfo &d, const std::string &tiles) {
  const std::string native = strFormat("sm_%d%d", d.major, d.minor);
  std::string s = "recompile with `glm5c compile --target " + native + "`";
  if (!tiles.empty() && tiles != native)
    s += " (or keep the " + tiles + " tiles with `--target " + tiles + " --run-on " + native +
         "`, where the tiles allow it)";
  return s;
}

} // namespace

StatusOr<std::vector<KernelImage>> chooseKernelImages(const pl::Plan &plan,
                                                      const DeviceInfo &device) {
  const std::string tiles = plan.target() && plan.target()->tiles() ? plan.target()->tiles()->str()
                                                                    : "";
  const std::string code =
      plan.target() && plan.target()->code_arch() ? plan.target()->code_arch()->str() : "";
  if (tiles == "host" || code.empty())
    return makeStatus(StatusCode::kInvalidArgument,
                      "the plan was compiled for the host backend (no GPU kernels); run it with "
                      "--device host, or %s",
                      suggestion(device, "").c_str());
  int codeCc = 0;
  bool specific = false;
  if (!parseArch(code, &codeCc, &specific))
    return makeStatus(StatusCode::kDataLoss, "plan.target.code_arch '%s' is not an sm_XY[a] arch",
                      code.c_str());
  const int deviceCc = device.major * 10 + device.minor;
  const bool cubinRuns =
      specific ? codeCc == deviceCc : codeCc / 10 == device.major && codeCc <= deviceCc;
  const bool ptxRuns = specific ? codeCc == deviceCc : codeCc <= deviceCc;
  if (!cubinRuns && !ptxRuns)
    return makeStatus(StatusCode::kFailedPrecondition,
                      "the plan's kernels were built for %s (tiles %s), which %s cannot run; %s",
                      code.c_str(), tiles.c_str(), deviceText(device).c_str(),
                      suggestion(device, tiles).c_str());
  std::vector<KernelImage> images;
  const auto *kernels = plan.kernels();
  for (uint32_t i = 0; kernels && i < kernels->size(); ++i) {
    const pl::Kernel *k = kernels->Get(i);
    const std::string name = k->variant() ? k->variant()->str() : strFormat("#%u", i);
    const int64_t smem = static_cast<int64_t>(k->static_smem()) + k->dynamic_smem();
    if (smem > device.maxSharedOptin)
      return makeStatus(StatusCode::kFailedPrecondition,
                        "kernel %s needs %lld B of shared memory per block, but %s allows %d B; "
                        "%s",
                        name.c_str(), static_cast<long long>(smem), deviceText(device).c_str(),
                        device.maxSharedOptin, suggestion(device, tiles).c_str());
    KernelImage image;
    if (cubinRuns && k->cubin() && k->cubin()->size() > 0) {
      image.cubin = true;
      image.data = k->cubin()->data();
      image.size = k->cubin()->size();
    } else if (ptxRuns && k->ptx() && k->ptx()->size() > 0) {
      image.data = k->ptx()->c_str(); // flatbuffers strings are NUL-terminated
      image.size = k->ptx()->size();
    } else {
      return makeStatus(StatusCode::kFailedPrecondition,
                        "kernel %s has no %s for %s (built for %s); %s", name.c_str(),
                        cubinRuns ? "cubin or PTX" : "PTX the driver could JIT",
                        deviceText(device).c_str(), code.c_str(),
                        suggestion(device, tiles).c_str());
    }
    images.push_back(image);
  }
  return images;
}

} // namespace glm5rt::cuda
