// The kernel templates of codegen/kernels, embedded in the binary at build time, so a compiler
// or benchmark binary carries its sources wherever it runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace glm5c::codegen {
// (file name, text) of every *.cuh in codegen/kernels.
const std::vector<std::pair<std::string, std::string>> &embeddedKernelFiles();
} // namespace glm5c::codegen
