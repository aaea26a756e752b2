// The target table: what each GPU generation offers the kernel templates (shared memory per
// block, SM count, tensor instructions, bandwidth). Tile choices are derived from these facts,
// never hard-coded per kernel (docs/kernels.md "Targets").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace glm5c::codegen {

struct Target {
  const char *name;            // "sm_120a"
  int computeCapability;       // 120
  bool archSpecific;           // the `a` variant: arch-specific instructions allowed
  const char *gpu;             // a representative card
  int smCount;
  int64_t maxSharedPerBlock;   // bytes, static + dynamic, with the opt-in attribute
  int64_t sharedPerSM;         // bytes
  double dramGBs;              // sustained copy bandwidth, GB/s (read + write)
  bool mmaSync;                // mma.sync bf16/fp16 m16n8k16 (every target here)
  bool mmaSyncFp8;             // mma.sync e4m3/e5m2 m16n8k32
  bool blockScaledMma;         // block-scaled fp8/fp6/fp4 mma (sm_120a)
  bool wgmma;                  // warpgroup mma (sm_90a only)
  bool tcgen05;                // tensor memory MMA (datacenter Blackwell; none here)
};

// Known targets: sm_120, sm_120a, sm_90, sm_90a.
const std::vector<Target> &targets();
const Target *findTarget(const std::string &name);
// "sm_120a, sm_120, sm_90a, sm_90"
std::string targetNames();

// What the compiled code runs on: the tile target's configurations may be compiled as code for
// another arch (emulation: `--target sm_120a --run-on sm_90` runs SM120 tiles on an H200). The
// code arch must offer every instruction the tile target's kernels use.
struct CompileTarget {
  const Target *tiles;   // chooses variants and tile sizes
  const Target *code;    // the NVRTC -arch; the runtime checks it against the device
  bool emulated() const { return tiles != code; }
};

// Validates a (tiles, code) pair: the code arch must not lack an instruction the tile target's
// variants use (e.g. sm_90a wgmma tiles cannot run as sm_120 code). Returns an empty string when
// the pair is usable, else the reason.
std::string checkEmulation(const Target &tiles, const Target &code);

} // namespace glm5c::codegen
