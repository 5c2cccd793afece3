// Time management: how long one search may run, from the UCI limits.
//
// Invariants:
// - All times are milliseconds of std::chrono::steady_clock, counted from `start` minus
//   `spent_ms`: the move's start, so time used before the search (set-up, a latent proposer)
//   is charged to the same budget.
// - `hard_ms` is never more than the remaining clock minus the move overhead (never below 1 ms
//   while a clock is given), so a search that stops at `hard_ms` cannot lose on time; `soft_ms`
//   <= `hard_ms` is when no new iteration starts. Negative values mean "no limit".
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "search_parameters.h"
#include "types.h"

namespace latentchess::core {

struct SearchLimits {
  int depth = 0;               // 0: no depth limit (kMaxPly - 1)
  std::uint64_t nodes = 0;     // 0: no node limit
  std::int64_t movetime_ms = -1;
  std::int64_t time_left_ms = -1;  // the side to move's clock; -1: no clock
  std::int64_t increment_ms = 0;
  int moves_to_go = 0;         // 0: sudden death
  int mate_in = 0;             // stop once a mate in this many moves (or fewer) is found
  bool infinite = false;       // search until stopped (depth and nodes still apply)
  int multipv = 1;
  int move_overhead_ms = 30;
  // Milliseconds this move already used before the search began (the hybrid's latent proposer):
  // the budget is counted from the move's start, so the search gets what is left of it.
  std::int64_t spent_ms = 0;
  // ---- hybrid additions (latent planning + alpha-beta; README "Hybrid", engines/hybrid.py) ----
  // Non-empty: only these root moves are searched (UCI `go searchmoves`); illegal ones ignored.
  std::vector<Move> search_moves;
  // External move orders by position key (best first), consulted at nodes of ply <= 2: listed
  // quiet moves are tried in this order after captures and killers' slot, and reduced by rank.
  std::unordered_map<std::uint64_t, std::vector<Move>> move_orders;
  // Pruning switches, for measuring what each one gains (all on in play).
  bool reverse_futility_pruning = true;
  bool late_move_pruning = true;
  bool see_pruning = true;
  bool futility_pruning = true;
  bool singular_extensions = true;
};

// Move overheads of clock kept in reserve by a clocked search (timeman.cpp).
inline constexpr std::int64_t kReserveOverheads = 10;

class TimeManager {
 public:
  using Clock = std::chrono::steady_clock;

  // `parameters` (validated): the plan's horizon, iteration share and opening profile
  // (time_moves_to_go, time_iteration_percent, time_opening_percent and time_opening_plies);
  // `game_ply`: plies played since the game's start (0 for the start position).
  TimeManager(const SearchLimits& limits, Clock::time_point start,
              const SearchParameters& parameters = SearchParameters{}, int game_ply = 0);

  std::int64_t elapsed_ms() const;
  bool has_deadline() const { return hard_ms_ >= 0; }
  bool past_hard_limit() const { return hard_ms_ >= 0 && elapsed_ms() >= hard_ms_; }
  // Whether another iteration should start (one that starts late in the budget rarely ends
  // before it; a fixed move time is used in full).
  bool may_start_iteration() const {
    return iteration_ms_ < 0 || elapsed_ms() < iteration_ms_;
  }
  std::int64_t soft_ms() const { return soft_ms_; }
  std::int64_t hard_ms() const { return hard_ms_; }
  // Clocked searches only: scale the time after which no new iteration starts by how settled
  // the search is (see Search::run): < 1 when the best move has held for several iterations,
  // > 1 after it changed or the score fell. Never past the hard limit; a fixed move time, a
  // depth or node limit alone are unaffected.
  void scale_iteration_time(double factor) {
    if (base_iteration_ms_ < 0) return;
    const auto scaled = static_cast<std::int64_t>(static_cast<double>(base_iteration_ms_) * factor);
    iteration_ms_ = std::clamp<std::int64_t>(scaled, 1, hard_ms_);
  }

 private:
  Clock::time_point start_;
  std::int64_t soft_ms_ = -1;
  std::int64_t hard_ms_ = -1;
  std::int64_t iteration_ms_ = -1;
  std::int64_t base_iteration_ms_ = -1;  // clocked searches: the iteration share before scaling
};

}  // namespace latentchess::core
