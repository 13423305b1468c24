#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "engine/engine_impl.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

SchedulerConfig MakeSchedulerConfig(const EngineConfig& c) {
  KILN_CHECK(c.max_batch_size > 0, "max_batch_size must be > 0");
  KILN_CHECK(c.max_batch_prefill_tokens > 0, "max_batch_prefill_tokens must be > 0");
  KILN_CHECK(c.max_queue > 0, "max_queue must be > 0");
  SchedulerConfig s;
  // Every running sequence must fit in one step's budget, or the youngest would never decode.
  s.max_batch_size = std::min(c.max_batch_size, c.max_batch_prefill_tokens);
  s.max_batch_tokens = c.max_batch_prefill_tokens;
  s.prefix_caching = c.prefix_caching;
  return s;
}

ModelRunner& CheckedRunner(const std::unique_ptr<ModelRunner>& runner) {
  KILN_CHECK(runner != nullptr, "the engine needs a model runner");
  KILN_CHECK(runner->vocab_size() > 0 && runner->block_size() > 0 && runner->num_blocks() > 0 &&
                 runner->num_blocks() <= INT32_MAX && runner->block_size() <= INT32_MAX,
             "model runner reports an empty vocabulary or KV pool");
  return *runner;
}

}  // namespace

Engine::Impl::Impl(std::unique_ptr<ModelRunner> runner, const Tokenizer* tokenizer,
                   EngineConfig config, std::unique_ptr<ModelRunner> draft)
    : runner_(std::move(runner)),
      tokenizer_(tokenizer),
      config_(config),
      vocab_(CheckedRunner(runner_).vocab_size()),
      kv_(static_cast<int32_t>(runner_->num_blocks()), static_cast<int32_t>(runner_->block_size()),
          config.prefix_caching),
      scheduler_(MakeSchedulerConfig(config), kv_),
      workspace_(vocab_),
      seed_source_(std::random_device{}()) {
  limits_ = {vocab_, runner_->block_size(), runner_->num_blocks(), runner_->max_context(),
             tokenizer_ != nullptr};
  if (tokenizer_ != nullptr) eos_ids_ = tokenizer_->StopIds();
  stats_.kv_blocks_total = runner_->num_blocks();
  stats_.speculate = config.speculation.max_draft;
  step_cost_.set_fixed(config.speculation.step_seconds);
  draft_cost_.set_fixed(config.speculation.draft_step_seconds);
  if (draft != nullptr) {
    KILN_CHECK(draft->vocab_size() == vocab_, "the draft model's vocabulary (", draft->vocab_size(),
               " tokens) differs from the model's (", vocab_, ")");
    KILN_CHECK(draft->block_size() == runner_->block_size() &&
                   draft->num_blocks() >= runner_->num_blocks(),
               "the draft model's KV pool must have the model's block layout");
    draft_ = std::make_unique<DraftModel>(std::move(draft));
  }
  thread_ = std::thread([this] { Loop(); });
}

Engine::Impl::~Impl() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

Engine::RequestId Engine::Impl::Submit(GenerationRequest request, EventSink sink) {
  ValidateRequest(request, limits_);
  KILN_CHECK(sink != nullptr, "Submit needs an event sink");
  RequestId id;
  {
    std::lock_guard lock(mu_);
    KILN_CHECK(!stopping_, "the engine is shutting down");
    KILN_CHECK(static_cast<int64_t>(inbox_.size()) + stats_.queued < config_.max_queue,
               "Model is overloaded");
    id = next_id_++;
    prompt_tokens_ += static_cast<int64_t>(request.prompt.size());
    inbox_.push_back({id, std::move(request), std::move(sink)});
  }
  wake_.notify_one();
  return id;
}

void Engine::Impl::Cancel(RequestId id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::Impl::Stats() const {
  EngineStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
    s.queued += static_cast<int64_t>(inbox_.size());
    s.prompt_tokens = prompt_tokens_;
  }
  // Outside the lock: the engine thread must not wait on a reader's clock syscalls.
  s.cores = runner_->cores();
  s.core_cpu_seconds = runner_->CoreCpuSeconds();
  return s;
}

void Engine::Impl::Loop() {
  std::deque<Incoming> inbox;
  std::vector<RequestId> cancels;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock,
                 [&] { return stopping_ || !inbox_.empty() || !cancels_.empty() || HasWork(); });
      if (stopping_) {
        inbox.swap(inbox_);
        break;
      }
      inbox.swap(inbox_);
      cancels.swap(cancels_);
    }
    for (Incoming& in : inbox) AddRequest(in);
    inbox.clear();
    for (RequestId id : cancels) CancelRequest(id);
    cancels.clear();
    Reap();
    if (HasWork()) Step();
    PublishStats();
  }
  CancelEverything(inbox);
  PublishStats();
}

void Engine::Impl::AddRequest(Incoming& in) {
  const auto& requested = in.request.sampling.seed;
  const uint64_t seed = requested ? *requested : seed_source_();
  auto state = MakeRequestState(in.id, std::move(in.request), std::move(in.sink), seed, eos_ids_,
                                tokenizer_);
  for (auto& seq : state->choices) waiting_.push_back(seq.get());
  requests_.emplace(in.id, std::move(state));
}

void Engine::Impl::CancelRequest(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;  // finished already
  for (auto& seq : it->second->choices) Finish(*seq, FinishReason::kCancelled);
}

void Engine::Impl::CancelEverything(std::deque<Incoming>& unstarted) {
  for (auto& [id, request] : requests_) {
    for (auto& seq : request->choices) Finish(*seq, FinishReason::kCancelled);
  }
  for (Incoming& in : unstarted) {
    for (int32_t c = 0; c < in.request.n; ++c) {
      GenerationEvent ev;
      ev.choice = c;
      ev.finish = FinishReason::kCancelled;
      ev.prompt_tokens = static_cast<int32_t>(in.request.prompt.size());
      try {
        if (!in.sink(std::move(ev))) break;
      } catch (const std::exception& e) {
        log::Warn(StrCat("engine: event sink threw: ", e.what()));
        break;
      }
    }
  }
  unstarted.clear();
  Reap();
}

void Engine::Impl::PublishStats() {
  const double rate = throughput_.Update(generated_);
  std::lock_guard lock(mu_);
  stats_.queued = static_cast<int64_t>(waiting_.size());
  stats_.running = static_cast<int64_t>(running_.size());
  stats_.kv_blocks_used = kv_.num_used_blocks();
  stats_.prefix_cache_hits = kv_.prefix_hits();
  stats_.kv_blocks_cached = kv_.num_cached_blocks();
  stats_.preemptions = preemptions_;
  stats_.steps = steps_;
  stats_.generated_tokens = generated_;
  stats_.tokens_per_second = rate;
  stats_.speculation = speculation_;
}

Engine::Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer* tokenizer, EngineConfig config,
               std::unique_ptr<ModelRunner> draft)
    : impl_(std::make_unique<Impl>(std::move(runner), tokenizer, config, std::move(draft))) {}

Engine::~Engine() = default;

Engine::RequestId Engine::Submit(GenerationRequest request, EventSink sink) {
  return impl_->Submit(std::move(request), std::move(sink));
}

void Engine::Cancel(RequestId id) { impl_->Cancel(id); }

EngineStats Engine::Stats() const { return impl_->Stats(); }

}  // namespace kiln
