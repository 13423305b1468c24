#include "model/rope_freqs.h"

#include <cmath>
#include <numbers>

#include "util/error.h"

namespace kiln {
namespace {

// transformers' _compute_llama3_parameters: long wavelengths are slowed by `factor`, short ones
// kept, and the band between is interpolated.
float Llama3Scale(float inv_freq, const RopeScaling& s) {
  const float factor = static_cast<float>(s.factor);
  const float low = static_cast<float>(s.low_freq_factor);
  const float high = static_cast<float>(s.high_freq_factor);
  const float old_ctx = static_cast<float>(s.original_max_position_embeddings);
  const float low_freq_wavelen = old_ctx / low;
  const float high_freq_wavelen = old_ctx / high;
  const float wavelen = 2.0f * std::numbers::pi_v<float> / inv_freq;
  float scaled = wavelen > low_freq_wavelen ? inv_freq / factor : inv_freq;
  const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
  if (medium) {
    const float smooth = (old_ctx / wavelen - low) / (high - low);
    scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
  }
  return scaled;
}

}  // namespace

std::vector<float> ComputeRopeInvFreq(const ModelConfig& config,
                                      const std::vector<float>* freq_factors) {
  const int64_t half = config.head_dim / 2;
  const float dim = static_cast<float>(config.head_dim);
  const float base = static_cast<float>(config.rope_theta);
  if (freq_factors != nullptr) {
    KILN_CHECK(static_cast<int64_t>(freq_factors->size()) == half,
               "rope_freqs.weight has ", freq_factors->size(), " entries, expected ", half);
  }
  std::vector<float> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) {
    float f = 1.0f / std::pow(base, static_cast<float>(2 * i) / dim);
    switch (config.rope_scaling.type) {
      case RopeScaling::Type::kNone: break;
      case RopeScaling::Type::kLinear: f /= static_cast<float>(config.rope_scaling.factor); break;
      case RopeScaling::Type::kLlama3: f = Llama3Scale(f, config.rope_scaling); break;
    }
    if (freq_factors != nullptr) f /= (*freq_factors)[i];
    inv_freq[i] = f;
  }
  return inv_freq;
}

}  // namespace kiln
