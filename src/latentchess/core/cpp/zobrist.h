// Polyglot Zobrist keys.
//
// Invariants:
//  * The keys are Polyglot's 781 public random numbers (zobrist_keys.h, generated from
//    chess.polyglot.POLYGLOT_RANDOM_ARRAY), so Position::key() equals chess.polyglot.zobrist_hash:
//    XOR of piece-square keys, one key per castling right, the en-passant file key only when a
//    pawn of the side to move stands next to the double-pushed pawn, and a key when White moves.
//  * Everything here is constexpr data; nothing is mutable.
#pragma once

#include <cstdint>

#include "types.h"
#include "zobrist_keys.h"

namespace latentchess::core::zobrist {

// Key of a piece of `color` and `type` on `square`.
constexpr std::uint64_t piece(Color color, PieceType type, Square square) {
    const int kind = 2 * (type - 1) + (color == White ? 1 : 0);
    return PolyglotRandom[64 * kind + square];
}

// XOR of the keys of the castling rights in the 4-bit set `rights` (K, Q, k, q).
constexpr std::uint64_t castling(int rights) {
    std::uint64_t key = 0;
    for (int i = 0; i < 4; ++i)
        if (rights & (1 << i)) key ^= PolyglotRandom[768 + i];
    return key;
}

constexpr std::uint64_t en_passant_file(int file) { return PolyglotRandom[772 + file]; }

constexpr std::uint64_t white_to_move() { return PolyglotRandom[780]; }

}  // namespace latentchess::core::zobrist
