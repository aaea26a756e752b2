// Quantized-linear launch geometry (see QLinear.h).
#include "runtime/launch/QLinear.h"

#include <algorithm>

namespace glm5rt::launch {

QLinearGrid qlinearGrid(const QLinearParams &p, int smCount, int64_t T, int64_t N, int64_t K) {
  QLinearGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  if (p.kind == QLinearKind::kEmbed) {
    l.gridX = static_cast<unsigned>(T);
    return l;
  }
  if (p.kind == QLinearKind::kPrefill) {
    l.gridX = static_cast<unsigned>((N + p.tileN - 1) / p.tileN);
    l.gridY = static_cast<unsigned>((T + p.tileM - 1) / p.tileM);
    return l;
  }
  const int64_t tiles = (N + p.rowsPerCta - 1) / p.rowsPerCta;
  const int64_t kSteps = (K + kQLinearKStep - 1) / kQLinearKStep;
  const int64_t want = (2 * int64_t(smCount) + tiles - 1) / tiles; // ~2 waves
  int64_t splits = std::clamp<int64_t>(want, 1, kSteps);
  const int64_t perSplit = (kSteps + splits - 1) / splits * kQLinearKStep;
  splits = (K + perSplit - 1) / perSplit;
  l.gridX = static_cast<unsigned>(tiles);
  l.gridY = static_cast<unsigned>(splits);
  l.splits = static_cast<int>(splits);
  l.kPerSplit = static_cast<int>(perSplit);
  if (splits > 1) {
    l.workspaceBytes = splits * int64_t(p.tokens) * N * 4;
    l.counters = tiles;
  }
  return l;
}

std::vector<std::pair<std::string, int64_t>> qlinearParamList(const QLinearParams &p) {
  std::vector<std::pair<std::string, int64_t>> l = {{"kind", static_cast<int64_t>(p.kind)}};
  if (p.kind == QLinearKind::kDecode) {
    l.push_back({"tokens", p.tokens});
    l.push_back({"rows_per_cta", p.rowsPerCta});
  } else if (p.kind == QLinearKind::kPrefill) {
    l.push_back({"tile_m", p.tileM});
    l.push_back({"tile_n", p.tileN});
  }
  return l;
}

StatusOr<QLinearParams> qlinearParamsOf(const glm5::plan::Kernel &k) {
  const std::string name = k.variant() ? k.variant()->str() : "?";
  auto get = [&](const char *key, int64_t lo, int64_t hi) -> StatusOr<int64_t> {
    if (k.params())
      for (const glm5::plan::Attr *a : *k.params())
        if (a->key() && a->key()->str() == key) {
          if (a->is_float() || a->is_string() || a->i() < lo || a->i() > hi)
            return makeStatus(StatusCode::kDataLoss,
                              "plan kernel %s: params.%s is outside [%lld, %lld]", name.c_str(),
                              key, static_cast<long long>(lo), static_cast<long long>(hi));
          return a->i();
        }
    return makeStatus(StatusCode::kDataLoss, "plan kernel %s: params.%s is missing", name.c_str(),
                      key);
  };
  QLinearParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  auto kind = get("kind", 0, 2);
  if (!kind.isOk())
    return kind.status();
  p.kind = static_cast<QLinearKind>(*kind);
  if (p.kind == QLinearKind::kDecode) {
    auto tokens = get("tokens", 1, 64);
    auto rows = get("rows_per_cta", 1, 1 << 16);
    if (!tokens.isOk())
      return tokens.status();
    if (!rows.isOk())
      return rows.status();
    p.tokens = static_cast<int>(*tokens);
    p.rowsPerCta = static_cast<int>(*rows);
  } else if (p.kind == QLinearKind::kPrefill) {
    auto m = get("tile_m", 1, 1024);
    auto n = get("tile_n", 1, 1024);
    if (!m.isOk())
      return m.status();
    if (!n.isOk())
      return n.status();
    p.tileM = static_cast<int>(*m);
    p.tileN = static_cast<int>(*n);
  }
  return p;
}

} // namespace glm5rt::launch
