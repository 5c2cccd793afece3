// Move ordering: scores a node's legal moves once, then hands them out best first.
//
// Invariants:
// - Order: the transposition-table move, captures and promotions that do not lose material
//   (by SEE; most valuable victim first, least valuable attacker next), the two killer moves,
//   the counter-move, quiet moves by history (butterfly + continuation 1 and 2 plies back), then
//   losing captures. With an external order (hybrid: the latent
//   model's ranking of a node's children), the quiet moves it lists come right after the killers,
//   in its order (score kExternalScore - rank), before the other quiet moves.
// - Every move of the list is returned exactly once; the list is the node's legal moves, so a
//   garbage TT move (not in the list) can never be played.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "movegen.h"
#include "position.h"
#include "types.h"

namespace latentchess::core {

// History of quiet moves that caused cut-offs, by side, from and to square ("butterfly" table).
class HistoryTable {
 public:
  static constexpr int kMax = 16384;

  int get(Color color, Move move) const {
    return table_[color][move.from()][move.to()];
  }
  // Gravity update: values stay in (-kMax, kMax) and recent results weigh more.
  void update(Color color, Move move, int bonus) {
    int& entry = table_[color][move.from()][move.to()];
    entry += bonus - entry * (bonus < 0 ? -bonus : bonus) / kMax;
  }
  void clear() { table_ = {}; }
  void halve() {
    for (auto& by_from : table_)
      for (auto& by_to : by_from)
        for (int& entry : by_to) entry /= 2;
  }

 private:
  std::array<std::array<std::array<int, 64>, 64>, 2> table_{};
};

// The history of quiet moves by what was played before them ("continuation history"): for the
// opponent's previous move (1 ply back) and our own before it (2 plies back), indexed by
// [that move's piece][its destination][this move's piece][this move's destination].
class ContinuationHistory {
 public:
  static constexpr int kMax = 16384;
  static constexpr int kSlots = 12 * 64;  // piece (colour * 6 + type - 1) x destination square

  ContinuationHistory() : table_(static_cast<std::size_t>(kSlots) * kSlots, 0) {}
  // The row of one earlier move (its piece and destination slot), or nullptr for none.
  const std::int16_t* row(int slot) const {
    return slot < 0 ? nullptr : table_.data() + static_cast<std::size_t>(slot) * kSlots;
  }
  void update(int previous_slot, int slot, int bonus) {
    if (previous_slot < 0) return;
    std::int16_t& entry = table_[static_cast<std::size_t>(previous_slot) * kSlots + slot];
    int value = entry;
    value += bonus - value * (bonus < 0 ? -bonus : bonus) / kMax;
    entry = static_cast<std::int16_t>(value);
  }
  void halve() {
    for (std::int16_t& entry : table_) entry = static_cast<std::int16_t>(entry / 2);
  }
  void clear() { std::fill(table_.begin(), table_.end(), 0); }

 private:
  std::vector<std::int16_t> table_;
};

// The slot of a move for the continuation tables: (colour * 6 + type - 1) * 64 + destination.
inline int history_slot(Color color, PieceType type, Square to) {
  return (static_cast<int>(color) * 6 + static_cast<int>(type) - 1) * 64 + static_cast<int>(to);
}

// What move ordering learns across the searches of one game: butterfly and continuation
// histories and the counter-move table (the quiet reply that last refuted a move, by that move's
// slot). Aged (halved) at each new search, cleared at a new game.
struct SearchHistory {
  SearchHistory() { counter_moves.fill(Move::none()); }

  HistoryTable butterfly;
  ContinuationHistory continuation;
  std::array<Move, ContinuationHistory::kSlots> counter_moves{};

  void age() {
    butterfly.halve();
    continuation.halve();
  }
  void clear() {
    butterfly.clear();
    continuation.clear();
    counter_moves.fill(Move::none());
  }
};

// The quiet-move context of one node: the rows of the continuation tables for the moves 1 and 2
// plies back (nullptr: none, e.g. after a null move or at the root) and the counter-move.
struct QuietContext {
  const std::int16_t* continuation[2] = {nullptr, nullptr};
  Move counter_move = Move::none();
};

class MovePicker {
 public:
  enum class Kind { All, Tactical };

  // All: every legal move (a normal node or a node in check). Tactical: legal captures and
  // queen promotions only (quiescence).
  MovePicker(const Position& position, Kind kind, Move table_move, const Move killers[2],
             const HistoryTable& history, const std::vector<Move>* external_order = nullptr,
             const QuietContext* quiet_context = nullptr);

  // The next move, or Move::none() when done. `score` receives its ordering score.
  Move next(int* score = nullptr);
  int size() const { return moves_.size; }

  static constexpr int kTableMoveScore = 1 << 30;
  static constexpr int kGoodCaptureScore = 1 << 28;
  static constexpr int kKillerScore = 1 << 26;
  static constexpr int kCounterMoveScore = kKillerScore - 1;
  static constexpr int kBadCaptureScore = -(1 << 28);
  // Quiet moves ranked by an external order score kExternalScore - rank (rank < 256).
  static constexpr int kExternalScore = 1 << 25;
  static bool is_external(int score) {
    return score > kExternalScore - 256 && score <= kExternalScore;
  }

 private:
  MoveList moves_;
  std::array<int, 256> scores_{};
  int index_ = 0;
};

bool is_tactical(const Position& position, Move move);

}  // namespace latentchess::core
