// Test doubles for the server: a byte-level tokenizer and a scripted engine that emits tokens
// from its own thread, as the real engine does, honouring Cancel and sinks that answer false.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/generation_backend.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kiln::testing {

// id = byte + 3; 1 is BOS, 2 is EOS.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> Encode(std::string_view text, bool add_special,
                              bool /*parse_special*/) const override {
    std::vector<int32_t> ids;
    if (add_special) ids.push_back(1);
    for (unsigned char c : text) ids.push_back(static_cast<int32_t>(c) + 3);
    return ids;
  }
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id >= 3)
        out += static_cast<char>(id - 3);
      else if (!skip_special)
        out += id == 1 ? "<s>" : "</s>";
    }
    return out;
  }
  std::string TokenPiece(int32_t id) const override {
    return id >= 3 ? std::string(1, static_cast<char>(id - 3)) : std::string();
  }
  std::string_view TokenText(int32_t id) const override {
    static const std::string kBytes = [] {
      std::string b(256, ' ');
      for (int i = 0; i < 256; ++i) b[i] = static_cast<char>(i);
      return b;
    }();
    if (id >= 3) return std::string_view(kBytes).substr(static_cast<size_t>(id - 3), 1);
    return id == 1 ? "<s>" : id == 2 ? "</s>" : "<pad>";
  }
  int32_t vocab_size() const override { return 259; }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return 2; }
  bool IsSpecial(int32_t id) const override { return id < 3; }
  bool IsControl(int32_t id) const override { return id < 3; }
  bool AddsBos() const override { return true; }
  bool AddsEos() const override { return false; }
  std::vector<int32_t> StopIds() const override { return {2}; }
};

// Emits, every `step`, one token per running choice: the letters of `script` in turn (then
// 'x'), with logprob -0.5 and top_n alternatives. A prompt containing "EOS" ends with the EOS
// token after 2 tokens; "FAIL" ends with an error after 1; "HOLD" emits nothing until
// Release(). At most `max_running` requests run; the rest wait in a queue.
class FakeEngine : public GenerationBackend {
 public:
  explicit FakeEngine(std::chrono::milliseconds step = std::chrono::milliseconds(1))
      : step_(step), thread_([this] { Loop(); }) {}
  ~FakeEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t Submit(GenerationRequest request, EventSink sink) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_) throw kiln::Error("the engine queue is full");
    const uint64_t id = ++next_id_;
    submitted_.push_back(request);
    Active a{id, std::move(request), std::move(sink), {}, {}};
    a.generated.assign(static_cast<size_t>(std::max(1, a.request.n)), 0);
    a.done.assign(a.generated.size(), false);
    active_.push_back(std::move(a));
    cv_.notify_all();
    return id;
  }

  void Cancel(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.push_back(id);
    std::erase_if(active_, [id](const Active& a) { return a.id == id; });
  }

  EngineStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s;
    s.running = std::min<int64_t>(static_cast<int64_t>(active_.size()), max_running);
    s.queued = static_cast<int64_t>(active_.size()) - s.running;
    s.kv_blocks_total = 100;
    s.kv_blocks_used = s.running * 2;
    s.cores = {3, 5};
    s.core_cpu_seconds = {1.25, 0.5};
    return s;
  }

  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_released_ = true;
    cv_.notify_all();
  }
  void set_refuse(bool refuse) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_ = refuse;
  }
  std::vector<GenerationRequest> submitted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  std::vector<uint64_t> cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  size_t active() const {
    std::lock_guard<std::mutex> lock(mu_);
    return active_.size();
  }

  std::string script = "Hello world";
  int64_t max_running = 1000;

 private:
  struct Active {
    uint64_t id;
    GenerationRequest request;
    EventSink sink;
    std::vector<int32_t> generated;
    std::vector<bool> done;
  };

  static bool PromptHas(const GenerationRequest& r, const std::string& marker) {
    std::string text;
    for (int32_t id : r.prompt) text += id >= 3 ? static_cast<char>(id - 3) : '\0';
    return text.find(marker) != std::string::npos;
  }

  GenerationEvent Next(Active& a, int32_t choice) {
    GenerationEvent e;
    e.choice = choice;
    e.prompt_tokens = static_cast<int32_t>(a.request.prompt.size());
    e.seed = a.request.sampling.seed.value_or(42);
    int32_t& k = a.generated[choice];
    if (PromptHas(a.request, "FAIL")) {
      e.finish = FinishReason::kError;
      e.error = "the fake engine failed";
      return e;
    }
    const bool eos = PromptHas(a.request, "EOS") && k == 2;
    const char c = k < static_cast<int32_t>(script.size()) ? script[k] : 'x';
    e.token_id = eos ? 2 : static_cast<int32_t>(static_cast<unsigned char>(c)) + 3;
    e.text = eos ? "" : std::string(1, c);
    e.special = eos;
    e.logprob = -0.5f - 0.1f * static_cast<float>(choice);
    for (int32_t t = 0; t < a.request.top_n_tokens; ++t) {
      e.top.push_back({e.token_id, e.logprob, e.text, eos});
    }
    ++k;
    e.generated_tokens = k;
    if (eos) {
      e.finish = FinishReason::kEosToken;
    } else if (k >= a.request.stop.max_new_tokens) {
      e.finish = FinishReason::kLength;
    }
    return e;
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, step_);
      std::vector<std::pair<EventSink*, GenerationEvent>> out;
      int64_t running = 0;
      for (Active& a : active_) {
        if (running++ >= max_running) break;
        if (PromptHas(a.request, "HOLD") && !hold_released_) continue;
        for (int32_t c = 0; c < static_cast<int32_t>(a.generated.size()); ++c) {
          if (!a.done[c]) {
            out.emplace_back(&a.sink, Next(a, c));
            if (out.back().second.finish) a.done[c] = true;
          }
        }
      }
      // Sinks are called with the lock held here only because active_ owns them; the real
      // engine calls them from its thread too.
      std::vector<uint64_t> gone;
      for (auto& [sink, event] : out) {
        if (!(*sink)(std::move(event))) {
          for (const Active& a : active_) {
            if (&a.sink == sink) gone.push_back(a.id);
          }
        }
      }
      std::erase_if(active_, [&](const Active& a) {
        bool all_done = std::all_of(a.done.begin(), a.done.end(), [](bool d) { return d; });
        return all_done || std::find(gone.begin(), gone.end(), a.id) != gone.end();
      });
    }
    // Like the real engine: pending requests end cancelled when it stops.
    for (Active& a : active_) {
      for (int32_t c = 0; c < static_cast<int32_t>(a.done.size()); ++c) {
        if (a.done[c]) continue;
        GenerationEvent e;
        e.choice = c;
        e.finish = FinishReason::kCancelled;
        a.sink(std::move(e));
      }
    }
    active_.clear();
  }

  const std::chrono::milliseconds step_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Active> active_;
  std::vector<GenerationRequest> submitted_;
  std::vector<uint64_t> cancelled_;
  uint64_t next_id_ = 0;
  bool hold_released_ = false;
  bool refuse_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kiln::testing
