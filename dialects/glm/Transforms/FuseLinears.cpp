//===- FuseLinears.cpp - decode glm.linear ops of one input -> glm.linears -===//
#include "dialects/glm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"

namespace glm5c::glm {
#define GEN_PASS_DEF_GLMFUSELINEARS
#include "dialects/glm/Transforms/Passes.h.inc"
} // namespace glm5c::glm

using namespace mlir;
using namespace glm5c::glm;

namespace {

// At most this many products per glm.linears (its weight attributes w0..w3).
constexpr size_t kMaxGroup = 4;

struct GlmFuseLinears : glm5c::glm::impl::GlmFuseLinearsBase<GlmFuseLinears> {
  void runOnOperation() override {
    // One token's products of one input value and one GGUF type, per block in program order
    // (an input is defined in one block, so its users in each block form their own groups).
    llvm::MapVector<std::tuple<Block *, Value, unsigned>, SmallVector<LinearOp>> groups;
    getOperation().walk([&](LinearOp lin) {
      auto in = cast<RankedTensorType>(lin.getInput().getType());
      if (in.isDynamicDim(0) || in.getDimSize(0) != 1)
        return; // prefill: the tiled kernel, one product per launch
      groups[{lin->getBlock(), lin.getInput(),
              static_cast<unsigned>(lin.getWeight().getType())}]
          .push_back(lin);
    });
    for (auto &[key, lins] : groups)
      for (size_t first = 0; first + 1 < lins.size(); first += kMaxGroup)
        fuse(SmallVector<LinearOp>(lins.begin() + first,
                                   lins.begin() + std::min(lins.size(), first + kMaxGroup)));
  }

  // Replaces `lins` (2..4, same input, in program order) by one glm.linears at the first.
  void fuse(SmallVector<LinearOp> lins) {
    if (lins.size() < 2)
      return;
    OpBuilder b(lins.front());
    SmallVector<Type> types;
    SmallVector<Location> locs;
    for (LinearOp l : lins) {
      types.push_back(l.getResult().getType());
      locs.push_back(l.getLoc());
    }
    auto at = [&](size_t i) {
      return i < lins.size() ? lins[i].getWeight() : GgufTensorAttr();
    };
    auto fused = LinearsOp::create(b, b.getFusedLoc(locs), types, lins.front().getInput(), at(0),
                                   at(1), at(2), at(3));
    for (size_t i = 0; i < lins.size(); ++i) {
      lins[i].getResult().replaceAllUsesWith(fused.getResult(i));
      lins[i].erase();
    }
  }
};

} // namespace
