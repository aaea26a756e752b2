# lit configuration of the glm5c suite: tool substitutions, FileCheck from LLVM 22, and the
# features `nvrtc` (NVRTC can be loaded and answers) and `cuda` (a GPU is present).
import ctypes
import glob
import os
import shutil
import sys

import lit.formats

config.name = "glm5c"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "unit", "fuzz", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.glm5c_obj_root, "test")

# Our tools first, then LLVM 22's FileCheck/not/count; nothing from other LLVM versions.
path = os.path.pathsep.join([config.glm5c_tools_dir, config.llvm_tools_dir,
                             config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
for var in ("HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

filecheck = os.path.join(config.llvm_tools_dir, "FileCheck")
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Tools", "Inputs")))
# Longest names first: substitutions are regexes applied in order, and %glm5c prefixes %glm5c-opt.
for tool in ("glm5c-gpu-tests", "glm5c-opt", "glm5-gguf", "glm5-run", "glm5c"):
    exe = os.path.join(config.glm5c_tools_dir, tool)
    config.substitutions.append(("%" + tool, exe))
    if os.path.exists(exe):
        config.available_features.add("tool-" + tool)
# Every FileCheck in a RUN line is LLVM 22's, with --enable-var-scope.
config.substitutions.append((r"(?<![/\w-])FileCheck\b", filecheck + " --enable-var-scope"))

if config.glm5c_build_compiler:
    config.available_features.add("compiler")


def _load(names):
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _nvrtc_usable():
    libs = sorted(glob.glob(os.path.join(config.cuda_root, "lib64", "libnvrtc.so*")))
    lib = _load(libs + ["libnvrtc.so", "libnvrtc.so.13"])
    if lib is None:
        return False
    major, minor = ctypes.c_int(), ctypes.c_int()
    return lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0


def _gpu_present():
    lib = _load(["libcuda.so.1", "libcuda.so"])
    if lib is None or lib.cuInit(0) != 0:
        return False
    count = ctypes.c_int()
    return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


if _nvrtc_usable():
    config.available_features.add("nvrtc")
if _gpu_present():
    config.available_features.add("cuda")
lit_config.note("glm5c features: " + " ".join(sorted(
    f for f in config.available_features if f in ("nvrtc", "cuda", "compiler"))))
