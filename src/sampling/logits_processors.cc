#include "sampling/logits_processors.h"

#include <limits>

namespace kiln {
namespace {

void Set(float* logits, int32_t id, float value, LogitsUndo& undo) {
  undo.emplace_back(id, logits[id]);
  logits[id] = value;
}

}  // namespace

void ApplyLogitBias(float* logits, std::span<const std::pair<int32_t, float>> bias,
                    LogitsUndo& undo) {
  for (const auto& [id, b] : bias) Set(logits, id, logits[id] + b, undo);
}

void ApplyRepetitionPenalty(float* logits, const TokenCounts& counts, float penalty,
                            LogitsUndo& undo) {
  counts.ForEach([&](const TokenCounts::Entry& e) {
    if (!e.in_prompt && e.generated == 0) return;
    const float x = logits[e.token];
    Set(logits, e.token, x > 0 ? x / penalty : x * penalty, undo);
  });
}

void ApplyFrequencyPresencePenalty(float* logits, const TokenCounts& counts, float frequency,
                                   float presence, LogitsUndo& undo) {
  counts.ForEach([&](const TokenCounts::Entry& e) {
    if (e.generated == 0) return;
    Set(logits, e.token, logits[e.token] - frequency * e.generated - presence, undo);
  });
}

void SuppressTokens(float* logits, std::span<const int32_t> ids, LogitsUndo& undo) {
  for (int32_t id : ids) Set(logits, id, -std::numeric_limits<float>::infinity(), undo);
}

void RestoreLogits(float* logits, LogitsUndo& undo) {
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) logits[it->first] = it->second;
  undo.clear();
}

}  // namespace kiln
