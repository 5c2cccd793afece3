// The evaluation slot of the alpha-beta search, and the hand-crafted evaluation (HCE).
//
// Invariants:
// - `Evaluator::evaluate(position)` returns centipawns from the side to move's point of view,
//   strictly inside (-kEvaluationBound, kEvaluationBound), so it never reads as a mate score.
// - The incremental hooks come in nested pairs around the position's own do/undo:
//   `on_do_move(position, move)` is called BEFORE `position.do_move(move)` (the evaluator sees the
//   move on the position it applies to), `on_undo_move()` AFTER `position.undo_move()`; the same
//   for null moves. `reset(position)` is called at the root of every search; afterwards the
//   evaluator's state matches that position. An NNUE evaluator keeps its accumulators here.
// - An evaluator is used by one search thread at a time; `clone()` gives an independent copy.
// - The HCE is a pure function of the position: its incremental part (material and piece-square
//   tables) is checked against a from-scratch recomputation in debug builds.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "position.h"
#include "types.h"

namespace latentchess::core {

inline constexpr int kEvaluationBound = 20000;

class Evaluator {
 public:
  virtual ~Evaluator() = default;

  virtual std::string name() const = 0;
  virtual std::unique_ptr<Evaluator> clone() const = 0;

  virtual void reset(const Position& position) = 0;
  virtual void on_do_move(const Position& before, Move move) = 0;
  virtual void on_undo_move() = 0;
  virtual void on_do_null_move() = 0;
  virtual void on_undo_null_move() = 0;

  virtual int evaluate(const Position& position) = 0;
};

// Tapered middlegame/endgame score, White's point of view.
struct TaperedScore {
  int middlegame = 0;
  int endgame = 0;

  TaperedScore& operator+=(TaperedScore other) {
    middlegame += other.middlegame;
    endgame += other.endgame;
    return *this;
  }
  TaperedScore& operator-=(TaperedScore other) {
    middlegame -= other.middlegame;
    endgame -= other.endgame;
    return *this;
  }
};

// Which terms the HCE adds on top of material and piece-square tables (for measurements).
struct HandCraftedTerms {
  bool pawn_structure = true;
  bool mobility = true;
  bool king_safety = true;
  bool pieces = true;  // bishop pair, rooks on open files
};

class HandCraftedEvaluator final : public Evaluator {
 public:
  explicit HandCraftedEvaluator(HandCraftedTerms terms = {});

  std::string name() const override { return "hce"; }
  std::unique_ptr<Evaluator> clone() const override;

  void reset(const Position& position) override;
  void on_do_move(const Position& before, Move move) override;
  void on_undo_move() override;
  void on_do_null_move() override {}
  void on_undo_null_move() override {}

  int evaluate(const Position& position) override;

  // Material + piece-square tables + game phase, recomputed from scratch (White's view).
  struct Accumulator {
    TaperedScore score;
    int phase = 0;  // 0 (bare kings and pawns) .. 24 (all pieces)
  };
  static Accumulator accumulate(const Position& position);

 private:
  struct PawnEntry {
    std::uint64_t key = 0;
    TaperedScore score;
  };

  TaperedScore pawn_structure(const Position& position);
  TaperedScore pieces_and_mobility(const Position& position, Color us) const;

  HandCraftedTerms terms_;
  std::vector<Accumulator> stack_;
  std::vector<PawnEntry> pawn_table_;
};

// "hce", "pesto", "nnue:PATH" (nnue_file.h) or "latent:KEY" (a sparse latent encoder registered
// under KEY: latent_encoder.h); std::invalid_argument for anything else.
std::unique_ptr<Evaluator> make_evaluator(const std::string& name);

}  // namespace latentchess::core
