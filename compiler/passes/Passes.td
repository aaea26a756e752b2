//===- Passes.td - compiler passes that use codegen (target facts, registry) ===//
#ifndef GLM5C_COMPILER_PASSES_TD
#define GLM5C_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def GlmSpecializeKernels : Pass<"glm-specialize-kernels", "mlir::ModuleOp"> {
  let summary = "Pick a kernel variant and tile sizes for every op from the target";
  let description = [{
    For each glm op, asks the kernel registry for a variant that fits the target (shared
    memory, instructions, head dims, quant types, activation dtype) and records it as
    `glm.kernel = #glm.kernel<...>`. When nothing fits, the op gets an error listing every
    candidate and why it was rejected (once per op kind, with the number of ops affected).
    Target facts default to the module's `#glm.target`; the options override them.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"\"",
           "tile target (default: the module's #glm.target)">,
    Option<"maxSmem", "max-smem", "int64_t", "0",
           "shared memory per block in bytes (default: the target's)">,
    Option<"actF32", "act-f32", "bool", "false", "f32 activations and KV cache">,
  ];
  let dependentDialects = ["glm5c::glm::GlmDialect"];
}

#endif
