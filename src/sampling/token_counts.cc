#include "sampling/token_counts.h"

namespace kiln {

const TokenCounts::Entry* TokenCounts::Find(int32_t token) const {
  if (slots_.empty()) return nullptr;
  for (size_t i = Home(token);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].token == token) return &slots_[i];
    if (slots_[i].token < 0) return nullptr;
  }
}

TokenCounts::Entry& TokenCounts::Slot(int32_t token) {
  if (2 * (order_.size() + 1) > slots_.size()) Grow();  // load <= 1/2
  size_t i = Home(token);
  for (; slots_[i].token >= 0; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].token == token) return slots_[i];
  }
  slots_[i].token = token;
  order_.push_back(static_cast<int32_t>(i));
  return slots_[i];
}

void TokenCounts::Grow() {
  std::vector<Entry> old;
  old.swap(slots_);
  std::vector<int32_t> old_order;
  old_order.swap(order_);
  slots_.resize(old.empty() ? 64 : 2 * old.size());
  order_.reserve(slots_.size() / 2);
  for (int32_t i : old_order) {
    const Entry& e = old[i];
    Entry& s = Slot(e.token);
    s.generated = e.generated;
    s.in_prompt = e.in_prompt;
  }
}

}  // namespace kiln
