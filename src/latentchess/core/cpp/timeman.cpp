// Time budgets from limits (see timeman.h for the contract).
//
// Invariants:
// - Clocked search: the budget for this move is the clock shared over the moves still to play
//   (moves-to-go, else the time_moves_to_go parameter: 20), plus most of the increment; the hard
//   limit allows up to 4x the budget when an iteration runs long but never more than a third of
//   what is left beyond the overhead; no new iteration starts past time_iteration_percent (70) of
//   the budget. The parameters arrive validated (SearchParameters::validate: both at least 1).
// - The opening profile: at game ply p the clock's share (not the increment's) is scaled by
//   1 + (time_opening_percent / 100 - 1) * (1 - p / time_opening_plies) while p is below
//   time_opening_plies, else by 1; the hard limit's caps (4x the budget, a third of the plan)
//   and the reserve are unchanged, so a front-loaded plan still cannot run the clock out.
// - A reserve of kReserveOverheads move overheads (300 ms at the default 30 ms; none when the
//   move overhead is 0 or the next move refills the clock) is kept off the plan: once the clock
//   falls into it, a move gets at most 3/4 of the increment scaled by how much of the reserve is
//   left, so the clock settles in the reserve instead of draining to the flag under load.
#include "timeman.h"

#include <algorithm>

namespace latentchess::core {

namespace {

// The clock's share of a move at `game_ply` under the opening profile (see the invariants).
std::int64_t opening_share(std::int64_t share, const SearchParameters& parameters, int game_ply) {
  const int plies = parameters.time_opening_plies;
  if (parameters.time_opening_percent == 100 || game_ply >= plies) return share;
  const std::int64_t left = plies - std::max(0, game_ply);  // 1..plies
  const std::int64_t extra = parameters.time_opening_percent - 100;
  return share + share * extra * left / (100 * static_cast<std::int64_t>(plies));
}

}  // namespace

TimeManager::TimeManager(const SearchLimits& limits, Clock::time_point start,
                         const SearchParameters& parameters, int game_ply)
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
    const int moves =
        limits.moves_to_go > 0 ? std::min(limits.moves_to_go, 50) : parameters.time_moves_to_go;
    const std::int64_t increment_share = limits.increment_ms * 3 / 4;
    // The reserve: clock the budget never plans to spend, so that a stall of the machine (a busy
    // core, a slow pipe) lands in it instead of past the flag. Below it the budget shrinks with
    // what is left of it, down to nothing, so the clock settles inside it instead of draining.
    const std::int64_t reserve = limits.moves_to_go == 1 ? 0 : kReserveOverheads * overhead;
    const std::int64_t spendable = limits.time_left_ms - overhead - reserve;
    std::int64_t budget;
    std::int64_t hard;
    if (spendable > 0 || reserve == 0) {
      const std::int64_t plan = std::max<std::int64_t>(1, spendable);
      const std::int64_t share = opening_share(plan / moves, parameters, game_ply);
      budget = std::min(share + increment_share, usable * 4 / 5);
      hard = std::min(budget * 4, plan / 3 + increment_share);
    } else {
      const std::int64_t inside = std::max<std::int64_t>(0, limits.time_left_ms - overhead);
      budget = increment_share * inside / reserve;
      hard = budget * 2;
    }
    hard = std::clamp<std::int64_t>(hard, 1, usable);
    if (limits.moves_to_go == 1) hard = std::min(usable, std::max(hard, usable * 4 / 5));
    const std::int64_t soft = std::clamp<std::int64_t>(budget, 1, hard);
    hard_ms_ = hard_ms_ >= 0 ? std::min(hard_ms_, hard) : hard;
    soft_ms_ = soft_ms_ >= 0 ? std::min(soft_ms_, soft) : soft;
    const std::int64_t share =
        std::max<std::int64_t>(1, soft * parameters.time_iteration_percent / 100);
    iteration_ms_ = iteration_ms_ >= 0 ? std::min(iteration_ms_, share) : share;
    if (limits.movetime_ms < 0) base_iteration_ms_ = iteration_ms_;
  }
}

std::int64_t TimeManager::elapsed_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
}

}  // namespace latentchess::core
