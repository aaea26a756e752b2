// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1): the runtime links no CUDA
// library, and a machine without a GPU gets a clear status instead of a loader error. Every call
// returns a Status carrying the driver's error name and string and what was being done.
#pragma once

#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace glm5rt::cuda {

// Opaque driver handles (the driver API's CUdevice, CUcontext, ...), kept as plain types so
// this header needs no CUDA include.
using Device = int;
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Event = struct CUevent_st *;
using Graph = struct CUgraph_st *;
using GraphExec = struct CUgraphExec_st *;
using DevicePtr = unsigned long long;

struct DeviceInfo {
  std::string name;
  int major = 0, minor = 0;    // compute capability
  int smCount = 0;
  int maxSharedOptin = 0;      // bytes per block with the opt-in attribute
  size_t totalMemory = 0;
};

// The loaded driver with one context on one device. Not copyable; one per process is enough.
class Driver {
public:
  // Loads libcuda, initializes it and creates a context on `ordinal`. Errors say what is missing
  // (no libcuda: suggest the host backend; no device; ...).
  static StatusOr<Driver *> get(int ordinal = 0);

  const DeviceInfo &info() const { return info_; }

  Status loadModule(const void *image, Module *out, const std::string &what);
  Status getFunction(Module m, const char *name, Function *out);
  Status setMaxDynamicSmem(Function f, int bytes, const std::string &what);
  Status malloc(DevicePtr *p, size_t bytes, const std::string &what);
  Status free(DevicePtr p);
  Status copyToDevice(DevicePtr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, DevicePtr src, size_t bytes);
  Status memsetD8(DevicePtr dst, unsigned char value, size_t bytes);
  // Ordered on `s` (capturable in a graph).
  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes, Stream s);
  // `rows` rows of `widthBytes` from src (rows `srcPitch` bytes apart) to dst (`dstPitch`
  // apart), ordered on `s` (capturable).
  Status copy2DDeviceToDevice(DevicePtr dst, size_t dstPitch, DevicePtr src, size_t srcPitch,
                              size_t widthBytes, size_t rows, Stream s);
  Status memInfo(size_t *freeBytes, size_t *totalBytes);
  Status launch(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned smem, Stream s, void **params, const std::string &what);
  // A launch in thread-block clusters of `clusterX` CTAs along x (gx a multiple of it);
  // clusterX == 1 is a plain launch. Needs compute capability 9.0 or newer for clusterX > 1.
  Status launchClustered(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned clusterX, unsigned smem, Stream s, void **params,
                         const std::string &what);
  // launchClustered, but the launch may begin while the kernel before it on `s` still runs
  // (programmatic dependent launch; compute capability 9.0 or newer, else a plain launch). f
  // must wait for its predecessor (common.cuh glm_grid_chain) before it touches any memory
  // that kernel writes or reads; the predecessor's completion and memory are then visible.
  Status launchOverlapped(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned clusterX, unsigned smem, Stream s, void **params,
                          const std::string &what);
  // CTAs of f (with `threads` threads and `smem` bytes of dynamic shared memory) one SM holds at
  // once: its registers and shared memory against the device's.
  Status occupancy(Function f, int threads, size_t smem, int *ctasPerSm);
  // Clusters of `clusterX` CTAs of f the device can hold at once (0: such a cluster cannot be
  // placed, e.g. not enough SMs with that much free shared memory in one GPC).
  Status clusterOccupancy(Function f, unsigned gx, int threads, size_t smem, unsigned clusterX,
                          int *clusters);
  Status streamCreate(Stream *s);
  Status synchronize(Stream s);
  Status eventCreate(Event *e);
  Status eventRecord(Event e, Stream s);
  Status eventElapsedMs(float *ms, Event start, Event end);
  Status beginCapture(Stream s);
  Status endCapture(Stream s, Graph *g);
  Status instantiate(GraphExec *exec, Graph g);
  Status graphLaunch(GraphExec exec, Stream s);

private:
  Driver() = default;
  Status check(int result, const char *call, const std::string &what) const;
  // cuLaunchKernelEx with a cluster (clusterX > 1) and/or programmatic stream serialization.
  Status launchEx(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                  unsigned clusterX, bool overlapped, unsigned smem, Stream s, void **params,
                  const std::string &what);
  Status init(int ordinal);

  void *lib_ = nullptr;
  Context ctx_ = nullptr;
  DeviceInfo info_;
  struct Api;
  Api *api_ = nullptr;
};

} // namespace glm5rt::cuda
