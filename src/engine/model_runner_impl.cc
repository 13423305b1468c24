#include "engine/model_runner_impl.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "util/core_set.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace kiln {
namespace {

int64_t PoolBlocks(const ModelConfig& config, const ModelRunnerOptions& o) {
  int64_t tokens = o.max_batch_total_tokens;
  if (tokens <= 0)
    tokens = o.kv_memory_bytes / PagedKvCache::BytesPerToken(config, o.kv_cache_dtype);
  KILN_CHECK(tokens >= o.block_size, "KV budget of ", tokens,
             " tokens is smaller than one block of ", o.block_size);
  return tokens / o.block_size;
}

class ModelRunnerImpl : public ModelRunner {
 public:
  ModelRunnerImpl(Model& model, const ModelRunnerOptions& o)
      : ModelRunnerImpl(model, PoolBlocks(model.config(), o), o,
                        std::make_shared<ThreadPool>(o.cores.empty() ? AllowedCores() : o.cores,
                                                     o.pin_threads)) {}
  ModelRunnerImpl(Model& model, int64_t num_blocks, const ModelRunnerOptions& o,
                  std::shared_ptr<ThreadPool> pool)
      : model_(model),
        kv_(model.config(), num_blocks, o.block_size, o.kv_cache_dtype),
        pool_(std::move(pool)) {}

  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }

  int64_t vocab_size() const override { return model_.config().vocab_size; }
  int64_t block_size() const override { return kv_.block_size(); }
  int64_t num_blocks() const override { return kv_.num_blocks(); }
  int64_t max_context() const override { return model_.config().max_position_embeddings; }
  void Forward(const Batch& batch, float* logits) override {
    pool_->RecordCallerClock();  // a one-core pool's kernels run inline, never via RunOnAll
    model_.Forward(batch, kv_, *pool_, logits);
  }
  std::vector<int> cores() const override { return pool_->cores(); }
  std::vector<double> CoreCpuSeconds() const override { return pool_->CpuSeconds(); }

 private:
  Model& model_;
  PagedKvCache kv_;
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace

std::unique_ptr<ModelRunner> MakeDraftRunner(Model& draft, const ModelRunner& target,
                                             DType kv_cache_dtype) {
  const auto* t = dynamic_cast<const ModelRunnerImpl*>(&target);
  KILN_CHECK(t != nullptr, "a draft model runs beside a model runner of MakeModelRunner");
  ModelRunnerOptions o;
  o.block_size = target.block_size();
  o.kv_cache_dtype = kv_cache_dtype;
  return std::make_unique<ModelRunnerImpl>(draft, target.num_blocks(), o, t->pool());
}

std::unique_ptr<ModelRunner> MakeModelRunner(Model& model, const ModelRunnerOptions& options) {
  KILN_CHECK(options.block_size > 0, "KV block size must be > 0");
  return std::make_unique<ModelRunnerImpl>(model, options);
}

}  // namespace kiln
