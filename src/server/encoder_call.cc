#include "server/encoder_call.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "api/api_error.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

class EncoderCall : public std::enable_shared_from_this<EncoderCall> {
 public:
  EncoderCall(Reply reply, Admission::Permit permit, size_t n, EncoderFinish finish)
      : reply_(std::move(reply)),
        permit_(std::move(permit)),
        results_(n),
        remaining_(static_cast<int64_t>(n)),
        finish_(std::move(finish)),
        cancelled_(std::make_shared<std::atomic<bool>>(false)) {}

  const std::shared_ptr<std::atomic<bool>>& cancelled() const { return cancelled_; }
  const Reply& reply() const { return reply_; }

  void Deliver(size_t i, EncoderResult&& r) {
    results_[i] = std::move(r);
    if (remaining_.fetch_sub(1) == 1) Complete();
  }

  // The inputs past `submitted` will never come back (Submit refused one): count them done.
  void Abandon(size_t submitted, const api::ApiError& why) {
    error_ = std::make_unique<api::ApiError>(why);
    cancelled_->store(true);
    const auto missing = static_cast<int64_t>(results_.size() - submitted);
    if (remaining_.fetch_sub(missing) == missing) Complete();
  }

 private:
  void Complete() {
    if (error_ != nullptr) {
      RespondError(reply_, *error_);
    } else if (cancelled_->load()) {
      // The client left: nothing to answer (the exchange ignores it anyway).
    } else {
      Answer();
    }
    permit_.Release();
  }

  void Answer() {
    for (const EncoderResult& r : results_) {
      if (!r.error.empty()) {
        RespondError(reply_, api::ApiError(500, "backend", r.error));
        return;
      }
    }
    try {
      RespondJson(reply_, 200, finish_(results_));
    } catch (const api::ApiError& e) {
      RespondError(reply_, e);
    } catch (const std::exception& e) {
      log::Error(StrCat("encoder response failed: ", e.what()));
      RespondError(reply_, api::ApiError(500, "backend", e.what()));
    }
  }

  Reply reply_;
  Admission::Permit permit_;
  std::vector<EncoderResult> results_;
  std::atomic<int64_t> remaining_;
  EncoderFinish finish_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::unique_ptr<api::ApiError> error_;  // set before the last count-down, read after it
};

}  // namespace

void RunEncoderCall(ServerState& state, Reply reply, Admission::Permit permit,
                    std::vector<EncoderRequest> inputs, EncoderFinish finish) {
  auto call = std::make_shared<EncoderCall>(std::move(reply), std::move(permit), inputs.size(),
                                            std::move(finish));
  std::weak_ptr<std::atomic<bool>> flag = call->cancelled();
  call->reply().exchange->OnClose([flag] {
    if (auto f = flag.lock()) f->store(true);
  });
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].cancelled = call->cancelled();
    try {
      state.encoder->Submit(std::move(inputs[i]),
                            [call, i](EncoderResult&& r) { call->Deliver(i, std::move(r)); });
    } catch (const std::exception&) {
      // Inputs were checked before; what is left is a full queue.
      call->Abandon(i, api::OverloadedError());
      return;
    }
  }
}

}  // namespace kiln
