// Perft: the number of leaf nodes of the legal move tree, the standard move-generator check.
//
// Invariants:
//  * perft(p, d) leaves p exactly as it found it (do/undo are paired).
//  * Depth 1 is bulk counted (the size of the legal move list), as Stockfish's `go perft`.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "position.h"

namespace latentchess::core {

std::uint64_t perft(Position& position, int depth);

// Per root move counts (Stockfish's `go perft` "divide"), in move generation order.
std::vector<std::pair<Move, std::uint64_t>> perft_divide(Position& position, int depth);

}  // namespace latentchess::core
