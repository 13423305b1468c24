#include "engine/encoder_engine.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Pending {
  EncoderRequest request;
  EncoderCallback done;
  Clock::time_point queued_at;
};

}  // namespace

class EncoderEngine::Impl {
 public:
  Impl(std::unique_ptr<EncoderModel> model, std::shared_ptr<ThreadPool> pool,
       EncoderEngineConfig config)
      : model_(std::move(model)), pool_(std::move(pool)), config_(config) {
    thread_ = std::thread([this] { Loop(); });
  }

  ~Impl() {
    std::deque<Pending> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      left.swap(queue_);
    }
    cv_.notify_all();
    thread_.join();
    for (Pending& p : left) {
      EncoderResult r;
      r.error = "the server is shutting down";
      p.done(std::move(r));
    }
  }

  void Submit(Pending p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      KILN_CHECK(static_cast<int64_t>(queue_.size()) < config_.max_queue,
                 "the encoder's queue is full (", config_.max_queue, " requests)");
      queue_.push_back(std::move(p));
    }
    cv_.notify_one();
  }

  EncoderEngineStats Stats() const {
    EncoderEngineStats s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s.queued = static_cast<int64_t>(queue_.size());
    }
    s.running = running_.load();
    s.batches = batches_.load();
    s.requests = requests_.load();
    s.tokens = tokens_.load();
    s.cores = pool_->cores();
    s.core_cpu_seconds = pool_->CpuSeconds();
    return s;
  }

 private:
  // The next batch: the queue's head, then more while the token and sequence budgets allow.
  // Requests whose client is gone are dropped here, before they cost a forward pass.
  std::vector<Pending> TakeBatch() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    std::vector<Pending> batch;
    int64_t tokens = 0;
    while (!queue_.empty() && !stop_) {
      Pending& head = queue_.front();
      if (head.request.cancelled && head.request.cancelled->load()) {
        queue_.pop_front();
        continue;
      }
      const auto n = static_cast<int64_t>(head.request.tokens.size());
      if (!batch.empty() && (tokens + n > config_.max_batch_tokens ||
                             static_cast<int64_t>(batch.size()) >= config_.max_batch_requests)) {
        break;
      }
      tokens += n;
      batch.push_back(std::move(head));
      queue_.pop_front();
    }
    return batch;
  }

  void Loop() {
    for (;;) {
      std::vector<Pending> batch = TakeBatch();
      if (batch.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        continue;
      }
      Run(batch);
    }
  }

  void Run(std::vector<Pending>& batch) {
    const Clock::time_point start = Clock::now();
    tokens_buf_.clear();
    types_buf_.clear();
    lengths_.clear();
    bool any_types = false;
    for (const Pending& p : batch) any_types |= !p.request.type_ids.empty();
    for (const Pending& p : batch) {
      const EncoderRequest& r = p.request;
      tokens_buf_.insert(tokens_buf_.end(), r.tokens.begin(), r.tokens.end());
      if (any_types) {
        if (r.type_ids.empty()) {
          types_buf_.insert(types_buf_.end(), r.tokens.size(), 0);
        } else {
          types_buf_.insert(types_buf_.end(), r.type_ids.begin(), r.type_ids.end());
        }
      }
      lengths_.push_back(static_cast<int64_t>(r.tokens.size()));
    }
    running_.store(static_cast<int64_t>(batch.size()));
    std::vector<EncoderResult> results(batch.size());
    try {
      const float* hidden =
          model_->Forward(EncoderBatch{tokens_buf_, types_buf_, lengths_}, *pool_);
      Collect(batch, hidden, results);
    } catch (const std::exception& e) {
      // Submit validated every request, so this is a fault of the batch as a whole.
      log::Error(StrCat("encoder forward failed: ", e.what()));
      for (EncoderResult& r : results) {
        r.values.clear();
        r.error = StrCat("encoder forward failed: ", e.what());
      }
    }
    running_.store(0);
    const Clock::time_point end = Clock::now();
    batches_.fetch_add(1);
    requests_.fetch_add(static_cast<int64_t>(batch.size()));
    tokens_.fetch_add(static_cast<int64_t>(tokens_buf_.size()));
    for (size_t i = 0; i < batch.size(); ++i) {
      results[i].queue_seconds = Seconds(start - batch[i].queued_at);
      results[i].compute_seconds = Seconds(end - start);
      results[i].batch_size = static_cast<int64_t>(batch.size());
      batch[i].done(std::move(results[i]));
    }
  }

  // Each request's output from the batch's hidden states [T, D].
  void Collect(const std::vector<Pending>& batch, const float* hidden,
               std::vector<EncoderResult>& results) {
    const int64_t d = model_->config().hidden_size;
    int64_t offset = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const EncoderRequest& r = batch[i].request;
      const int64_t n = lengths_[i];
      const float* h = hidden + offset * d;
      std::vector<float>& out = results[i].values;
      switch (r.task) {
        case EncoderTask::kEmbed:
          out.resize(d);
          model_->Pool(h, n, r.pooling, out.data());
          break;
        case EncoderTask::kClassify:
          out.resize(model_->config().labels.size());
          model_->ClassifierLogits(h, *pool_, out.data());
          break;
        case EncoderTask::kSpans:
          out.resize(static_cast<size_t>(n * 2));
          model_->SpanLogits(h, n, *pool_, out.data());
          break;
        case EncoderTask::kTokens:
          out.assign(h, h + n * d);
          break;
      }
      offset += n;
    }
  }

  std::unique_ptr<EncoderModel> model_;
  std::shared_ptr<ThreadPool> pool_;
  const EncoderEngineConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stop_ = false;
  std::atomic<int64_t> running_{0}, batches_{0}, requests_{0}, tokens_{0};
  std::vector<int32_t> tokens_buf_, types_buf_;
  std::vector<int64_t> lengths_;
  std::thread thread_;
};

EncoderEngine::EncoderEngine(std::unique_ptr<EncoderModel> model, std::shared_ptr<ThreadPool> pool,
                             EncoderEngineConfig config)
    : config_(model->config()), engine_config_(config) {
  KILN_CHECK(config.max_batch_tokens >= config_.max_input_tokens, "--max-batch-tokens (",
             config.max_batch_tokens, ") must hold the model's longest input (",
             config_.max_input_tokens, ")");
  impl_ = std::make_unique<Impl>(std::move(model), std::move(pool), config);
}

EncoderEngine::~EncoderEngine() = default;

void EncoderEngine::Submit(EncoderRequest request, EncoderCallback done) {
  const auto n = static_cast<int64_t>(request.tokens.size());
  KILN_CHECK(n > 0, "an encoder input needs at least one token");
  KILN_CHECK(n <= config_.max_input_tokens, "an encoder input of ", n, " tokens (the model takes ",
             config_.max_input_tokens, ")");
  KILN_CHECK(request.type_ids.empty() || request.type_ids.size() == request.tokens.size(),
             "token type ids do not match the tokens");
  for (int32_t id : request.tokens) {
    KILN_CHECK(id >= 0 && id < config_.vocab_size, "token id ", id, " outside the vocabulary");
  }
  for (int32_t id : request.type_ids) {
    KILN_CHECK(id >= 0 && id < config_.type_vocab_size, "token type id ", id, " out of range");
  }
  if (request.task == EncoderTask::kClassify) {
    KILN_CHECK(config_.head == EncoderHead::kSequenceClassification, config_.arch_name,
               " has no classification head");
  }
  if (request.task == EncoderTask::kSpans) {
    KILN_CHECK(config_.head == EncoderHead::kQuestionAnswering, config_.arch_name,
               " has no question-answering head");
  }
  std::shared_lock lock(mu_);
  KILN_CHECK(impl_ != nullptr, "the model has been unloaded");
  impl_->Submit(Pending{std::move(request), std::move(done), Clock::now()});
}

EncoderEngineStats EncoderEngine::Stats() const {
  std::shared_lock lock(mu_);
  return impl_ != nullptr ? impl_->Stats() : EncoderEngineStats{};
}

void EncoderEngine::Shutdown() {
  std::unique_ptr<Impl> dying;
  {
    std::unique_lock lock(mu_);
    dying = std::move(impl_);
  }
  dying.reset();  // outside the lock: its last callbacks may reach back in
}

}  // namespace kiln
