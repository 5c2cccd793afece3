// Move ordering: scores a node's legal moves once, then hands them out best first.
//
// Invariants:
// - Order: the transposition-table move, captures and promotions that do not lose material
//   (by SEE; most valuable victim first, least valuable attacker next), the two killer moves,
//   quiet moves by history, then losing captures. With an external order (hybrid: the latent
//   model's ranking of a node's children), the quiet moves it lists come right after the killers,
//   in its order (score kExternalScore - rank), before the other quiet moves.
// - Every move of the list is returned exactly once; the list is the node's legal moves, so a
//   garbage TT move (not in the list) can never be played.
#pragma once

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

 private:
  std::array<std::array<std::array<int, 64>, 64>, 2> table_{};
};

class MovePicker {
 public:
  enum class Kind { All, Tactical };

  // All: every legal move (a normal node or a node in check). Tactical: legal captures and
  // queen promotions only (quiescence).
  MovePicker(const Position& position, Kind kind, Move table_move, const Move killers[2],
             const HistoryTable& history, const std::vector<Move>* external_order = nullptr);

  // The next move, or Move::none() when done. `score` receives its ordering score.
  Move next(int* score = nullptr);
  int size() const { return moves_.size; }

  static constexpr int kTableMoveScore = 1 << 30;
  static constexpr int kGoodCaptureScore = 1 << 28;
  static constexpr int kKillerScore = 1 << 26;
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
