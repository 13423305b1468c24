#include "model/kv_cache.h"

#include "util/error.h"

namespace kiln {

KvCache::KvCache(const ModelConfig& config, int64_t capacity_tokens)
    : capacity_(capacity_tokens),
      layer_stride_(capacity_tokens * config.num_kv_heads * config.head_dim) {
  KILN_CHECK(capacity_tokens > 0, "KV cache capacity must be > 0");
  k_.assign(static_cast<size_t>(layer_stride_ * config.num_layers), 0.0f);
  v_.assign(static_cast<size_t>(layer_stride_ * config.num_layers), 0.0f);
}

}  // namespace kiln
