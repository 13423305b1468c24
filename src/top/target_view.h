// What the monitor knows about one target after its latest poll: reachable or not, Kiln or
// not, its last two snapshots and the rates between them.
#pragma once

#include <optional>
#include <string>

#include "top/rates.h"
#include "top/status_snapshot.h"

namespace kiln::top {

enum class Health {
  kPending,      // not polled yet
  kUp,           // answered a kiln.status document
  kUnreachable,  // no HTTP answer (refused, timed out, reset)
  kNotKiln,      // answered, but not /v1/status of a Kiln server
};

const char* HealthName(Health h);  // "pending", "up", "unreachable", "not kiln"

struct TargetView {
  std::string url;
  Health health = Health::kPending;
  std::string error;  // why, for kUnreachable and kNotKiln
  std::optional<StatusSnapshot> current, previous;
  Rates rates;  // current against previous; !valid until two polls of one process

  // A new answer: keeps the last snapshot to rate against.
  void Update(StatusSnapshot snapshot);
  // A failed poll: the last snapshot stays on screen (marked stale by the health), but no
  // rate is computed across the gap.
  void Fail(Health health, std::string error);
};

}  // namespace kiln::top
