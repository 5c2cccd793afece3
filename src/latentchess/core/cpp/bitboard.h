// Bitboards and attack tables.
//
// Invariants:
//  * Bit i of a Bitboard is square i (a1 = bit 0, h8 = bit 63).
//  * The attack tables are built once, when the extension is loaded, and are immutable after;
//    every function here is pure and thread-safe.
//  * Sliding attacks use "fancy" magic bitboards with constant multipliers (those a deterministic
//    search with fixed per-rank seeds finds; each is checked at load, the search is the fallback),
//    so the tables are the same on every run and need no CPU-specific instruction (no PEXT).
#pragma once

#include <cstdint>

#include "types.h"

namespace latentchess::core {

constexpr Bitboard FileABits = 0x0101010101010101ULL;
constexpr Bitboard FileHBits = FileABits << 7;
constexpr Bitboard Rank1Bits = 0xFFULL;
constexpr Bitboard Rank8Bits = Rank1Bits << 56;
constexpr Bitboard DarkSquares = 0xAA55AA55AA55AA55ULL;
constexpr Bitboard LightSquares = ~DarkSquares;

constexpr Bitboard square_bb(Square square) { return Bitboard{1} << square; }
// lsb and msb require bits != 0.
inline int popcount(Bitboard bits) { return __builtin_popcountll(bits); }
inline Square lsb(Bitboard bits) { return __builtin_ctzll(bits); }
inline Square msb(Bitboard bits) { return 63 - __builtin_clzll(bits); }
inline Square pop_lsb(Bitboard& bits) {
    const Square square = lsb(bits);
    bits &= bits - 1;
    return square;
}
constexpr bool more_than_one(Bitboard bits) { return (bits & (bits - 1)) != 0; }
constexpr Bitboard rank_bb(int rank) { return Rank1Bits << (8 * rank); }
constexpr Bitboard file_bb(int file) { return FileABits << file; }

constexpr Bitboard shift_north(Bitboard b) { return b << 8; }
constexpr Bitboard shift_south(Bitboard b) { return b >> 8; }
// The squares attacked by the pawns `pawns` of colour `color`.
constexpr Bitboard pawn_attacks_bb(Color color, Bitboard pawns) {
    return color == White ? ((pawns & ~FileABits) << 7) | ((pawns & ~FileHBits) << 9)
                          : ((pawns & ~FileABits) >> 9) | ((pawns & ~FileHBits) >> 7);
}

// One sliding-piece table entry per square: attacks = table[offset + ((occ & mask) * magic) >> shift].
struct Magic {
    Bitboard mask = 0;
    Bitboard magic = 0;
    unsigned shift = 0;
    unsigned offset = 0;
    unsigned index(Bitboard occupied) const {
        return offset + static_cast<unsigned>(((occupied & mask) * magic) >> shift);
    }
};

struct AttackTables {
    Bitboard knight[64];
    Bitboard king[64];
    Bitboard pawn[2][64];
    Bitboard between[64][64];  // squares strictly between two aligned squares, else 0
    Bitboard line[64][64];     // the full line through two aligned squares, else 0
    Magic rook_magic[64];
    Magic bishop_magic[64];
    Bitboard rook_attacks[102400];
    Bitboard bishop_attacks[5248];

    AttackTables();
};

// The one table instance, built during the extension's static initialisation.
extern const AttackTables& attack_tables;

inline Bitboard attacks_from_knight(Square square) { return attack_tables.knight[square]; }
inline Bitboard attacks_from_king(Square square) { return attack_tables.king[square]; }
inline Bitboard attacks_from_pawn(Color color, Square square) {
    return attack_tables.pawn[color][square];
}
inline Bitboard attacks_from_bishop(Square square, Bitboard occupied) {
    return attack_tables.bishop_attacks[attack_tables.bishop_magic[square].index(occupied)];
}
inline Bitboard attacks_from_rook(Square square, Bitboard occupied) {
    return attack_tables.rook_attacks[attack_tables.rook_magic[square].index(occupied)];
}
inline Bitboard attacks_from_queen(Square square, Bitboard occupied) {
    return attacks_from_bishop(square, occupied) | attacks_from_rook(square, occupied);
}
inline Bitboard between_bb(Square a, Square b) { return attack_tables.between[a][b]; }
inline Bitboard line_bb(Square a, Square b) { return attack_tables.line[a][b]; }

}  // namespace latentchess::core
