#include "top/target_view.h"

namespace kiln::top {

const char* HealthName(Health h) {
  switch (h) {
    case Health::kPending:
      return "pending";
    case Health::kUp:
      return "up";
    case Health::kUnreachable:
      return "unreachable";
    case Health::kNotKiln:
      return "not kiln";
  }
  return "?";
}

void TargetView::Update(StatusSnapshot snapshot) {
  // After a failure the previous snapshot is older than one interval: still a fair average.
  previous = std::move(current);
  current = std::move(snapshot);
  rates = previous ? ComputeRates(*previous, *current) : Rates{};
  health = Health::kUp;
  error.clear();
}

void TargetView::Fail(Health h, std::string why) {
  health = h;
  error = std::move(why);
  rates = Rates{};
}

}  // namespace kiln::top
