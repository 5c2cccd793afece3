// Static exchange evaluation: the material balance of the capture sequence on one square when
// both sides always recapture with their least valuable piece and may stop at any time.
//
// Invariants:
// - `see_at_least(position, move, threshold)` is true exactly when that balance, for the side
//   making `move`, is >= `threshold` (centipawns, kSeeValue units). Pins are ignored; x-ray
//   attackers behind a capturing slider join the exchange.
// - It never changes the position. Castling and promotions are judged by the piece that lands.
#pragma once

#include "position.h"
#include "types.h"

namespace latentchess::core {

inline constexpr int kSeeValue[7] = {0, 100, 320, 330, 500, 950, 20000};

bool see_at_least(const Position& position, Move move, int threshold);

}  // namespace latentchess::core
