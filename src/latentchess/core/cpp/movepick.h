// Move ordering: scores a node's legal moves once, then hands them out best first.
//
// Invariants:
// - Order: the transposition-table move, captures and promotions that do not lose material
//   (by SEE; most valuable victim first, least valuable attacker next, shifted by the capture
//   history when it is given a weight), the two killer moves,
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

// The squares `color` attacks, in layers by the cheapest attacker's class: pawns; pawns and minor
// pieces; those and rooks; everything (queens and the king too).
struct AttackLayers {
  Bitboard pawns = 0;
  Bitboard minors = 0;
  Bitboard rooks = 0;
  Bitboard all = 0;
};
AttackLayers attack_layers(const Position& position, Color color);
// The squares `color`'s pieces attack (pawns, pieces and king) in `position`.
Bitboard attacked_squares(const Position& position, Color color);

// History of quiet moves that caused cut-offs, by side, from and to square ("butterfly" table),
// and by whether the opponent attacks the from and the to square (`threats`: the squares it
// attacks; 0 keeps every move in the unthreatened quarter, a plain butterfly table).
class HistoryTable {
 public:
  static constexpr int kMax = 16384;

  int get(Color color, Move move, Bitboard threats = 0) const {
    return entry(color, move, threats);
  }
  // Gravity update: values stay in (-kMax, kMax) and recent results weigh more.
  void update(Color color, Move move, int bonus, Bitboard threats = 0) {
    int& value = entry(color, move, threats);
    value += bonus - value * (bonus < 0 ? -bonus : bonus) / kMax;
  }
  void clear() { std::fill(table_.begin(), table_.end(), 0); }
  void halve() {
    for (int& value : table_) value /= 2;
  }

 private:
  int& entry(Color color, Move move, Bitboard threats) {
    return table_[index(color, move, threats)];
  }
  const int& entry(Color color, Move move, Bitboard threats) const {
    return table_[index(color, move, threats)];
  }
  static std::size_t index(Color color, Move move, Bitboard threats) {
    const std::size_t from_threatened = (threats >> move.from()) & 1;
    const std::size_t to_threatened = (threats >> move.to()) & 1;
    return (((static_cast<std::size_t>(color) * 2 + from_threatened) * 2 + to_threatened) * 64 +
            move.from()) * 64 + move.to();
  }
  std::vector<int> table_ = std::vector<int>(2 * 2 * 2 * 64 * 64, 0);
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

// History of captures and promotions that caused cut-offs ("capture history"), by the moving
// piece and its destination (the continuation tables' slot) and the captured piece type
// (NoPieceType for a promotion that captures nothing, Pawn for en passant).
class CaptureHistory {
 public:
  static constexpr int kMax = 16384;

  int get(int slot, PieceType captured) const { return table_[slot][captured]; }
  // Gravity update, as HistoryTable::update.
  void update(int slot, PieceType captured, int bonus) {
    int& entry = table_[slot][captured];
    entry += bonus - entry * (bonus < 0 ? -bonus : bonus) / kMax;
  }
  void clear() { table_ = {}; }
  void halve() {
    for (auto& by_captured : table_)
      for (int& entry : by_captured) entry /= 2;
  }

 private:
  std::array<std::array<int, 7>, 12 * 64> table_{};
};

// The piece type a tactical move takes: what stands on its destination, a pawn for en passant,
// NoPieceType for a promotion that captures nothing.
PieceType captured_type(const Position& position, Move move);

// How far the search's results have stood from the static evaluation in positions with the same
// pawns ("correction history", as in Stockfish and Ethereal): by side to move and a hash of the
// two pawn bitboards, a running average of (search score - static evaluation), which the search
// adds to later static evaluations of such positions. The average lives in 1/kGrain centipawns
// and stays within +-kMaxCorrection centipawns; deeper results weigh more.
class CorrectionHistory {
 public:
  static constexpr int kEntries = 16384;  // per side to move; a power of two
  static constexpr int kGrain = 256;
  static constexpr int kMaxCorrection = 256;  // centipawns

  // The correction of `color`'s static evaluation, in centipawns.
  int get(Color color, Bitboard white_pawns, Bitboard black_pawns) const {
    return table_[color][index(white_pawns, black_pawns)] / kGrain;
  }
  // A node of `depth` with this static evaluation found `search_score` (neither a mate score nor
  // a bound on the wrong side of the evaluation): move the average towards the difference.
  void update(Color color, Bitboard white_pawns, Bitboard black_pawns, int difference,
              int depth) {
    int& entry = table_[color][index(white_pawns, black_pawns)];
    const int target = std::clamp(difference, -kMaxCorrection, kMaxCorrection) * kGrain;
    const int weight = std::min(depth + 1, 16);  // out of 256
    entry = static_cast<int>((static_cast<std::int64_t>(entry) * (256 - weight) +
                              static_cast<std::int64_t>(target) * weight) / 256);
  }
  void clear() { table_ = {}; }

 private:
  static int index(Bitboard white_pawns, Bitboard black_pawns) {
    std::uint64_t hash = white_pawns * 0x9E3779B97F4A7C15ULL;
    hash ^= (black_pawns + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL;
    hash ^= hash >> 31;
    return static_cast<int>((hash * 0x94D049BB133111EBULL) >> 50);  // 14 bits: kEntries
  }

  std::array<std::array<int, kEntries>, 2> table_{};
};

// What the search learns across the searches of one game: butterfly, continuation and capture
// histories and the counter-move table (the quiet reply that last refuted a move, by that move's slot) for
// move ordering, and the correction history for the static evaluation. The move-ordering tables
// are aged (halved) at each new search; everything is cleared at a new game.
struct SearchHistory {
  SearchHistory() { counter_moves.fill(Move::none()); }

  HistoryTable butterfly;
  ContinuationHistory continuation;
  std::array<Move, ContinuationHistory::kSlots> counter_moves{};
  CaptureHistory captures;
  CorrectionHistory correction;

  void age() {
    butterfly.halve();
    continuation.halve();
    captures.halve();
  }
  void clear() {
    butterfly.clear();
    continuation.clear();
    captures.clear();
    counter_moves.fill(Move::none());
    correction.clear();
  }
};

// The ordering context of one node beyond the butterfly table: the rows of the continuation
// tables for the moves 1 and 2 plies back (nullptr: none, e.g. after a null move or at the root),
// the counter-move, and the capture history with its weight (captures' order moves by
// history / divisor; nullptr or a divisor of 0: captures by victim and attacker alone).
// How many earlier moves' continuation histories order a quiet move (Search::continuation_slot).
inline constexpr int kContinuationPlies = 4;

struct QuietContext {
  // The continuation histories' rows of the moves 1, 2, 4 and 6 plies back (nullptr: none).
  const std::int16_t* continuation[kContinuationPlies] = {nullptr, nullptr, nullptr, nullptr};
  Move counter_move = Move::none();
  const CaptureHistory* captures = nullptr;
  int capture_divisor = 0;
  Bitboard threats = 0;  // the opponent's attacked squares for the butterfly table (0: unused)
  // Static terms of a quiet move's order (search parameters threat_order and check_order; 0:
  // off): a piece moved out of attack by a cheaper piece gains `threat_order` points per pawn of
  // its value class (minor 1, rook 2, queen 3), one moved into such an attack loses as much; a
  // move that gives check directly gains `check_order`.
  int threat_order = 0;
  int check_order = 0;
  Bitboard attacked_by_pawns = 0;   // the opponent's pawn attacks
  Bitboard attacked_by_minors = 0;  // ... and its knights' and bishops'
  Bitboard attacked_by_rooks = 0;   // ... and its rooks'
  Bitboard checking_squares[7] = {};  // by piece type: squares it would give check from
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
  std::array<int, 256> scores_;  // [0, moves_.size) written by the constructor (no zeroing: hot)
  int index_ = 0;
};

bool is_tactical(const Position& position, Move move);

// The static part of a quiet move's order score from `context` (threat_order, check_order).
int static_order(const QuietContext& context, PieceType moved, Move move);

}  // namespace latentchess::core
