// dlopen-based CUDA driver API wrapper (see Driver.h). Function pointers are resolved by their
// versioned names (the _v2 entry points where the API has them).
#include "runtime/cuda/Driver.h"

#include <dlfcn.h>

namespace glm5rt::cuda {

namespace {
using CUresult = int;
} // namespace

// cuda.h's CUDA_MEMCPY2D (the layout of its stable ABI) and CU_MEMORYTYPE_DEVICE.
struct Memcpy2D {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  DevicePtr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  DevicePtr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t widthInBytes, height;
};
constexpr int kMemoryTypeDevice = 2;

// cuda.h's CUlaunchAttribute (id, padding, a 64-byte value union), CUlaunchConfig and
// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute layout");
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  Stream hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
constexpr int kLaunchAttrClusterDimension = 4;
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

// The launch attribute of a 1-D cluster of `clusterX` CTAs.
static LaunchAttribute clusterAttribute(unsigned clusterX) {
  LaunchAttribute attr{};
  attr.id = kLaunchAttrClusterDimension;
  attr.value.clusterDim = {clusterX, 1, 1};
  return attr;
}

struct Driver::Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(Device *, int);
  CUresult (*cuDeviceGetName)(char *, int, Device);
  CUresult (*cuDeviceGetAttribute)(int *, int, Device);
  CUresult (*cuDeviceTotalMem)(size_t *, Device);
  CUresult (*cuDevicePrimaryCtxRetain)(Context *, Device);
  CUresult (*cuCtxSetCurrent)(Context);
  CUresult (*cuModuleLoadData)(Module *, const void *);
  CUresult (*cuModuleGetFunction)(Function *, Module, const char *);
  CUresult (*cuFuncSetAttribute)(Function, int, int);
  CUresult (*cuMemAlloc)(DevicePtr *, size_t);
  CUresult (*cuMemFree)(DevicePtr);
  CUresult (*cuMemcpyHtoD)(DevicePtr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, DevicePtr, size_t);
  CUresult (*cuMemsetD8)(DevicePtr, unsigned char, size_t);
  CUresult (*cuMemcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, Stream);
  CUresult (*cuMemcpy2DAsync)(const struct Memcpy2D *, Stream);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuLaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, Stream, void **, void **);
  CUresult (*cuLaunchKernelEx)(const LaunchConfig *, Function, void **, void **);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, Function, int, size_t);
  CUresult (*cuOccupancyMaxActiveClusters)(int *, Function, const LaunchConfig *);
  CUresult (*cuStreamCreate)(Stream *, unsigned);
  CUresult (*cuStreamSynchronize)(Stream);
  CUresult (*cuEventCreate)(Event *, unsigned);
  CUresult (*cuEventRecord)(Event, Stream);
  CUresult (*cuEventElapsedTime)(float *, Event, Event);
  CUresult (*cuStreamBeginCapture)(Stream, int);
  CUresult (*cuStreamEndCapture)(Stream, Graph *);
  CUresult (*cuGraphInstantiate)(GraphExec *, Graph, unsigned long long);
  CUresult (*cuGraphLaunch)(GraphExec, Stream);
};

// Driver attribute ids (cuda.h's CUdevice_attribute / CUfunction_attribute values).
constexpr int kAttrSmCount = 16;           // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;           // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;           // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrSmemOptin = 97;         // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kFuncMaxDynamicSmem = 8;     // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

Status Driver::check(int result, const char *call, const std::string &what) const {
  if (result == 0)
    return Status::ok();
  const char *name = "?", *text = "?";
  if (api_ && api_->cuGetErrorName)
    api_->cuGetErrorName(result, &name);
  if (api_ && api_->cuGetErrorString)
    api_->cuGetErrorString(result, &text);
  return makeStatus(StatusCode::kInternal, "%s%s%s failed: %s (%s)", what.c_str(),
                    what.empty() ? "" : ": ", call, name, text);
}

StatusOr<Driver *> Driver::get(int ordinal) {
  static Driver *instance = nullptr;
  static Status initStatus;
  if (!instance && initStatus.isOk()) {
    Driver *d = new Driver();
    initStatus = d->init(ordinal);
    if (initStatus.isOk())
      instance = d;
  }
  if (!instance)
    return initStatus;
  return instance;
}

Status Driver::init(int ordinal) {
  lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_)
    return makeStatus(StatusCode::kNotFound,
                      "cannot load the CUDA driver (libcuda.so.1): %s; is an NVIDIA driver "
                      "installed? Use --device host to run on the CPU", dlerror());
  api_ = new Api();
  struct Entry {
    void **slot;
    const char *name;
  } entries[] = {
      {reinterpret_cast<void **>(&api_->cuInit), "cuInit"},
      {reinterpret_cast<void **>(&api_->cuGetErrorName), "cuGetErrorName"},
      {reinterpret_cast<void **>(&api_->cuGetErrorString), "cuGetErrorString"},
      {reinterpret_cast<void **>(&api_->cuDeviceGetCount), "cuDeviceGetCount"},
      {reinterpret_cast<void **>(&api_->cuDeviceGet), "cuDeviceGet"},
      {reinterpret_cast<void **>(&api_->cuDeviceGetName), "cuDeviceGetName"},
      {reinterpret_cast<void **>(&api_->cuDeviceGetAttribute), "cuDeviceGetAttribute"},
      {reinterpret_cast<void **>(&api_->cuDeviceTotalMem), "cuDeviceTotalMem_v2"},
      {reinterpret_cast<void **>(&api_->cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain"},
      {reinterpret_cast<void **>(&api_->cuCtxSetCurrent), "cuCtxSetCurrent"},
      {reinterpret_cast<void **>(&api_->cuModuleLoadData), "cuModuleLoadData"},
      {reinterpret_cast<void **>(&api_->cuModuleGetFunction), "cuModuleGetFunction"},
      {reinterpret_cast<void **>(&api_->cuFuncSetAttribute), "cuFuncSetAttribute"},
      {reinterpret_cast<void **>(&api_->cuMemAlloc), "cuMemAlloc_v2"},
      {reinterpret_cast<void **>(&api_->cuMemFree), "cuMemFree_v2"},
      {reinterpret_cast<void **>(&api_->cuMemcpyHtoD), "cuMemcpyHtoD_v2"},
      {reinterpret_cast<void **>(&api_->cuMemcpyDtoH), "cuMemcpyDtoH_v2"},
      {reinterpret_cast<void **>(&api_->cuMemsetD8), "cuMemsetD8_v2"},
      {reinterpret_cast<void **>(&api_->cuMemcpyDtoDAsync), "cuMemcpyDtoDAsync_v2"},
      {reinterpret_cast<void **>(&api_->cuMemcpy2DAsync), "cuMemcpy2DAsync_v2"},
      {reinterpret_cast<void **>(&api_->cuMemGetInfo), "cuMemGetInfo_v2"},
      {reinterpret_cast<void **>(&api_->cuLaunchKernel), "cuLaunchKernel"},
      {reinterpret_cast<void **>(&api_->cuLaunchKernelEx), "cuLaunchKernelEx"},
      {reinterpret_cast<void **>(&api_->cuOccupancyMaxActiveBlocksPerMultiprocessor),
       "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
      {reinterpret_cast<void **>(&api_->cuOccupancyMaxActiveClusters),
       "cuOccupancyMaxActiveClusters"},
      {reinterpret_cast<void **>(&api_->cuStreamCreate), "cuStreamCreate"},
      {reinterpret_cast<void **>(&api_->cuStreamSynchronize), "cuStreamSynchronize"},
      {reinterpret_cast<void **>(&api_->cuEventCreate), "cuEventCreate"},
      {reinterpret_cast<void **>(&api_->cuEventRecord), "cuEventRecord"},
      {reinterpret_cast<void **>(&api_->cuEventElapsedTime), "cuEventElapsedTime_v2"},
      {reinterpret_cast<void **>(&api_->cuStreamBeginCapture), "cuStreamBeginCapture_v2"},
      {reinterpret_cast<void **>(&api_->cuStreamEndCapture), "cuStreamEndCapture"},
      {reinterpret_cast<void **>(&api_->cuGraphInstantiate), "cuGraphInstantiateWithFlags"},
      {reinterpret_cast<void **>(&api_->cuGraphLaunch), "cuGraphLaunch"},
  };
  for (const Entry &e : entries) {
    *e.slot = dlsym(lib_, e.name);
    if (!*e.slot && std::string(e.name) == "cuEventElapsedTime_v2")
      *e.slot = dlsym(lib_, "cuEventElapsedTime");
    if (!*e.slot)
      return makeStatus(StatusCode::kNotFound,
                        "the CUDA driver lacks %s: it is older than this runtime supports",
                        e.name);
  }
  GLM5_RETURN_IF_ERROR(check(api_->cuInit(0), "cuInit", "initializing the CUDA driver"));
  int count = 0;
  GLM5_RETURN_IF_ERROR(check(api_->cuDeviceGetCount(&count), "cuDeviceGetCount", ""));
  if (count <= ordinal)
    return makeStatus(StatusCode::kNotFound,
                      "no CUDA device %d (%d visible); use --device host to run on the CPU",
                      ordinal, count);
  Device dev;
  GLM5_RETURN_IF_ERROR(check(api_->cuDeviceGet(&dev, ordinal), "cuDeviceGet", ""));
  char name[256] = {0};
  api_->cuDeviceGetName(name, sizeof(name) - 1, dev);
  info_.name = name;
  api_->cuDeviceGetAttribute(&info_.major, kAttrCcMajor, dev);
  api_->cuDeviceGetAttribute(&info_.minor, kAttrCcMinor, dev);
  api_->cuDeviceGetAttribute(&info_.smCount, kAttrSmCount, dev);
  api_->cuDeviceGetAttribute(&info_.maxSharedOptin, kAttrSmemOptin, dev);
  api_->cuDeviceTotalMem(&info_.totalMemory, dev);
  GLM5_RETURN_IF_ERROR(
      check(api_->cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain", name));
  return check(api_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", name);
}

Status Driver::loadModule(const void *image, Module *out, const std::string &what) {
  return check(api_->cuModuleLoadData(out, image), "cuModuleLoadData", what);
}
Status Driver::getFunction(Module m, const char *name, Function *out) {
  return check(api_->cuModuleGetFunction(out, m, name), "cuModuleGetFunction", name);
}
Status Driver::setMaxDynamicSmem(Function f, int bytes, const std::string &what) {
  return check(api_->cuFuncSetAttribute(f, kFuncMaxDynamicSmem, bytes), "cuFuncSetAttribute",
               what + " (" + std::to_string(bytes) + " B dynamic shared memory)");
}
Status Driver::malloc(DevicePtr *p, size_t bytes, const std::string &what) {
  return check(api_->cuMemAlloc(p, bytes), "cuMemAlloc",
               what + " (" + std::to_string(bytes) + " bytes)");
}
Status Driver::free(DevicePtr p) { return check(api_->cuMemFree(p), "cuMemFree", ""); }
Status Driver::copyToDevice(DevicePtr dst, const void *src, size_t bytes) {
  return check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD", "");
}
Status Driver::copyToHost(void *dst, DevicePtr src, size_t bytes) {
  return check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH", "");
}
Status Driver::memsetD8(DevicePtr dst, unsigned char value, size_t bytes) {
  return check(api_->cuMemsetD8(dst, value, bytes), "cuMemsetD8", "");
}
Status Driver::copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes, Stream s) {
  return check(api_->cuMemcpyDtoDAsync(dst, src, bytes, s), "cuMemcpyDtoDAsync", "");
}
Status Driver::copy2DDeviceToDevice(DevicePtr dst, size_t dstPitch, DevicePtr src, size_t srcPitch,
                                   size_t widthBytes, size_t rows, Stream s) {
  Memcpy2D c{};
  c.srcMemoryType = kMemoryTypeDevice;
  c.srcDevice = src;
  c.srcPitch = srcPitch;
  c.dstMemoryType = kMemoryTypeDevice;
  c.dstDevice = dst;
  c.dstPitch = dstPitch;
  c.widthInBytes = widthBytes;
  c.height = rows;
  return check(api_->cuMemcpy2DAsync(&c, s), "cuMemcpy2DAsync", "");
}
Status Driver::memInfo(size_t *freeBytes, size_t *totalBytes) {
  return check(api_->cuMemGetInfo(freeBytes, totalBytes), "cuMemGetInfo", "");
}
namespace {
// CUDA's grid limits (x up to 2^31 - 1, y and z up to 65535), checked before a launch so that
// an oversized grid names its dims rather than the driver's CUDA_ERROR_INVALID_VALUE.
Status checkGrid(unsigned gx, unsigned gy, unsigned gz, const std::string &what) {
  if (gx > 0x7fffffffu || gy > 65535u || gz > 65535u)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: grid %u x %u x %u exceeds CUDA's limits (x up to 2147483647, y and z "
                      "up to 65535)", what.c_str(), gx, gy, gz);
  return Status::ok();
}
} // namespace

Status Driver::launch(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                      unsigned by, unsigned bz, unsigned smem, Stream s, void **params,
                      const std::string &what) {
  GLM5_RETURN_IF_ERROR(checkGrid(gx, gy, gz, what));
  return check(api_->cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, params, nullptr),
               "cuLaunchKernel", what);
}
Status Driver::launchClustered(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned clusterX, unsigned smem, Stream s, void **params,
                               const std::string &what) {
  return launchEx(f, gx, gy, gz, bx, clusterX, false, smem, s, params, what);
}
Status Driver::launchOverlapped(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned clusterX, unsigned smem, Stream s, void **params,
                                const std::string &what) {
  return launchEx(f, gx, gy, gz, bx, clusterX, info_.major >= 9, smem, s, params, what);
}
Status Driver::launchEx(Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned clusterX, bool overlapped, unsigned smem, Stream s,
                        void **params, const std::string &what) {
  if (clusterX <= 1 && !overlapped)
    return launch(f, gx, gy, gz, bx, 1, 1, smem, s, params, what);
  if (clusterX > 1 && gx % clusterX != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: grid x %u is not a multiple of the cluster size %u", what.c_str(), gx,
                      clusterX);
  if (clusterX > 1 && info_.major < 9)
    return makeStatus(StatusCode::kFailedPrecondition,
                      "%s: thread-block clusters need compute capability 9.0, the device has %d.%d",
                      what.c_str(), info_.major, info_.minor);
  LaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (clusterX > 1)
    attrs[n++] = clusterAttribute(clusterX);
  if (overlapped) {
    attrs[n].id = kLaunchAttrProgrammaticStreamSerialization;
    attrs[n++].value.bytes[0] = 1; // programmaticStreamSerializationAllowed (an int, little-endian)
  }
  GLM5_RETURN_IF_ERROR(checkGrid(gx, gy, gz, what));
  LaunchConfig cfg{gx, gy, gz, bx, 1, 1, smem, s, attrs, n};
  return check(api_->cuLaunchKernelEx(&cfg, f, params, nullptr), "cuLaunchKernelEx", what);
}
Status Driver::occupancy(Function f, int threads, size_t smem, int *ctasPerSm) {
  return check(api_->cuOccupancyMaxActiveBlocksPerMultiprocessor(ctasPerSm, f, threads, smem),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor", "");
}
Status Driver::clusterOccupancy(Function f, unsigned gx, int threads, size_t smem,
                                unsigned clusterX, int *clusters) {
  LaunchAttribute attr = clusterAttribute(clusterX);
  LaunchConfig cfg{gx, 1, 1, static_cast<unsigned>(threads), 1, 1, static_cast<unsigned>(smem),
                   nullptr, &attr, 1};
  return check(api_->cuOccupancyMaxActiveClusters(clusters, f, &cfg),
               "cuOccupancyMaxActiveClusters", "");
}
// A blocking stream (flags 0): it stays ordered with the legacy default stream, where the
// synchronous-API copies and memsets (cuMemcpyHtoD from pageable memory, cuMemsetD8) run, so a
// kernel never overtakes the upload or poisoning of its buffers.
Status Driver::streamCreate(Stream *s) {
  return check(api_->cuStreamCreate(s, 0), "cuStreamCreate", "");
}
Status Driver::synchronize(Stream s) {
  return check(api_->cuStreamSynchronize(s), "cuStreamSynchronize", "");
}
Status Driver::eventCreate(Event *e) { return check(api_->cuEventCreate(e, 0), "cuEventCreate", ""); }
Status Driver::eventRecord(Event e, Stream s) {
  return check(api_->cuEventRecord(e, s), "cuEventRecord", "");
}
Status Driver::eventElapsedMs(float *ms, Event a, Event b) {
  return check(api_->cuEventElapsedTime(ms, a, b), "cuEventElapsedTime", "");
}
Status Driver::beginCapture(Stream s) {
  return check(api_->cuStreamBeginCapture(s, 2 /*CU_STREAM_CAPTURE_MODE_RELAXED*/),
               "cuStreamBeginCapture", "");
}
Status Driver::endCapture(Stream s, Graph *g) {
  return check(api_->cuStreamEndCapture(s, g), "cuStreamEndCapture", "");
}
Status Driver::instantiate(GraphExec *exec, Graph g) {
  return check(api_->cuGraphInstantiate(exec, g, 0), "cuGraphInstantiate", "");
}
Status Driver::graphLaunch(GraphExec exec, Stream s) {
  return check(api_->cuGraphLaunch(exec, s), "cuGraphLaunch", "");
}

} // namespace glm5rt::cuda
