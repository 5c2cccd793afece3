// Legal move generation.
//
// Invariants:
//  * Every generator appends only legal moves of the side to move, each once; for any position
//    generate_legal_captures ∪ generate_legal_quiets == generate_legal_moves (disjoint).
//    "Captures" are captures, en-passant captures and every promotion (quiet ones included);
//    "quiets" are the rest, castling included.
//  * Legality comes from check and pin masks (no make/unmake), except en passant, which is
//    checked in full (it removes two pieces from a line: the horizontal-pin case).
#pragma once

#include <cstdint>

#include "position.h"
#include "types.h"

namespace latentchess::core {

void generate_legal_moves(const Position& position, MoveList& moves);
void generate_legal_captures(const Position& position, MoveList& moves);
void generate_legal_quiets(const Position& position, MoveList& moves);
bool has_legal_move(const Position& position);

}  // namespace latentchess::core
