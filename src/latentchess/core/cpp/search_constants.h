// Score and ply constants shared by the search, the transposition table and the bindings.
//
// Invariants:
// - kInfinity > kMate > kMateInMaxPly > kEvaluationBound (evaluate.h): static evaluations never
//   look like mates; a score s >= kMateInMaxPly means "mate in (kMate - s) plies".
// - All scores fit in int16 (the transposition table stores them so).
#pragma once

namespace latentchess::core {

inline constexpr int kMaxPly = 128;
inline constexpr int kInfinity = 32001;
inline constexpr int kMate = 32000;
inline constexpr int kMateInMaxPly = kMate - kMaxPly;
inline constexpr int kDraw = 0;
// Double singular extensions allowed on one line (SearchParameters::singular_double_margin), so
// that a line of forced moves cannot grow the search without bound.
inline constexpr int kMaxDoubleExtensions = 6;

}  // namespace latentchess::core
