// Time budgets from limits (see timeman.h for the contract).
//
// Invariants:
// - Clocked search: the budget for this move is the clock shared over the moves still to play
//   (moves-to-go, else 20), plus most of the increment; the hard limit allows up to 4x that when
//   an iteration runs long but never more than a third of what is left beyond the overhead.
#include "timeman.h"

#include <algorithm>

namespace latentchess::core {

TimeManager::TimeManager(const SearchLimits& limits, Clock::time_point start)
    : start_(start - std::chrono::milliseconds(std::max<std::int64_t>(0, limits.spent_ms))) {
  if (limits.infinite) return;
  const std::int64_t overhead = std::max(0, limits.move_overhead_ms);
  if (limits.movetime_ms >= 0) {
    hard_ms_ = std::max<std::int64_t>(1, limits.movetime_ms - overhead);
    soft_ms_ = hard_ms_;
    iteration_ms_ = hard_ms_;
  }
  if (limits.time_left_ms >= 0) {
    const std::int64_t usable = std::max<std::int64_t>(1, limits.time_left_ms - overhead);
    const int moves = limits.moves_to_go > 0 ? std::min(limits.moves_to_go, 50) : 20;
    std::int64_t budget = usable / moves + limits.increment_ms * 3 / 4;
    budget = std::min(budget, usable * 4 / 5);
    std::int64_t hard = std::min(budget * 4, usable / 3 + limits.increment_ms * 3 / 4);
    hard = std::clamp<std::int64_t>(hard, 1, usable);
    if (limits.moves_to_go == 1) hard = std::min(usable, std::max(hard, usable * 4 / 5));
    const std::int64_t soft = std::min(budget, hard);
    hard_ms_ = hard_ms_ >= 0 ? std::min(hard_ms_, hard) : hard;
    soft_ms_ = soft_ms_ >= 0 ? std::min(soft_ms_, soft) : soft;
    iteration_ms_ = iteration_ms_ >= 0 ? std::min(iteration_ms_, soft / 2) : soft / 2;
    if (limits.movetime_ms < 0) base_iteration_ms_ = iteration_ms_;
  }
}

std::int64_t TimeManager::elapsed_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
}

}  // namespace latentchess::core
