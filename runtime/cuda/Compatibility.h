// Whether a plan can run on a device, decided before anything is loaded: which binary of each
// kernel to hand the driver, and a clear error when none fits. No driver call is made here, so
// the rules are unit-tested without a GPU.
//
// Rules (CUDA's compatibility model):
//   - The plan must be a GPU plan (`target.tiles` is not "host").
//   - cubin: runs when the device's compute capability has the code arch's major version and a
//     minor version at least the code arch's; an arch-specific code arch (`sm_90a`, `sm_120a`)
//     runs only on exactly that capability.
//   - PTX: the driver JIT-compiles it for any device of capability >= the code arch's, except
//     arch-specific PTX, which only that exact capability accepts.
//   - Every kernel's static + dynamic shared memory must fit the device's opt-in limit per block.
// Errors name the arch the plan was built for, its tile target, the device and its capability,
// and the compile command that would fit this device.
#pragma once

#include "runtime/cuda/Driver.h"
#include "runtime/schema/plan_generated.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5rt::cuda {

// "sm_120a" -> capability 120, archSpecific; false for anything else.
bool parseArch(const std::string &arch, int *capability, bool *archSpecific);

struct KernelImage {
  bool cubin = false;          // else PTX (JIT-compiled by the driver)
  const void *data = nullptr;  // what cuModuleLoadData takes (PTX: NUL-terminated)
  size_t size = 0;
};

// One image per plan kernel, in the plan's kernel order.
StatusOr<std::vector<KernelImage>> chooseKernelImages(const glm5::plan::Plan &plan,
                                                      const DeviceInfo &device);

} // namespace glm5rt::cuda
