// Threat features (blocks T and TNK), equal to latentchess.nnue.features (the reference).
//
// Invariants:
//  * A pair is (attacking piece on its square, attacked piece on a square in its attack set):
//    pawns their two forward diagonals, sliders up to and including the first occupied square,
//    pins and the side to move ignored; the attacked piece may be of either colour.
//  * Feature of a pair from a perspective (board flipped for Black, c = 0 "ours"):
//    triple * K + kt, triple = base[ka][s] + the number of squares of the empty-board attack set
//    of kind ka on s below t (squares rank * 8 + file of the perspective's board, triples ordered
//    by ka, s, t); ka, kt = role * 2 + c. T: K = 12, 7,504 triples; TNK: K = 10 and no pair with
//    a king on either side (6,664 triples).
//  * A move is a few single-piece edits (remove_piece, put_piece); each lists exactly the pairs
//    it changes, so the lists of a move's edits, applied in order, turn the pairs of the board
//    before into those after (cancel_common drops what one edit removes and another restores).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "bitboard.h"
#include "position.h"
#include "types.h"

namespace latentchess::core {

struct ThreatLayout {
    int kinds = 0;  // attacker and attacked kinds (12 T, 10 TNK)
    int size = 0;   // triples * kinds
    std::array<std::array<std::int32_t, 64>, 12> base{};  // first triple of (ka, s); -1 none
    std::array<std::array<Bitboard, 64>, 12> attacks{};   // empty-board attack sets of (ka, s)
};

// The layout of T (no_king false) or TNK (true); built on first use.
const ThreatLayout& threat_layout(bool no_king);

// A pair packed in 20 bits: from << 14 | attacker << 10 | to << 4 | attacked (piece codes
// colour << 3 | type).
using ThreatPair = std::uint32_t;
inline ThreatPair make_threat_pair(int attacker, Square from, int attacked, Square to) {
    return static_cast<ThreatPair>(from << 14 | attacker << 10 | to << 4 | attacked);
}

// The feature of a pair from perspective's view (no offset); -1 where the layout has no such
// pair (TNK: a king on either side).
inline int threat_feature(const ThreatLayout& layout, Color perspective, ThreatPair pair) {
    const int from = static_cast<int>(pair >> 14), attacker = static_cast<int>(pair >> 10 & 15);
    const int to = static_cast<int>(pair >> 4 & 63), attacked = static_cast<int>(pair & 15);
    const int ka = ((attacker & 7) - 1) * 2 + ((attacker >> 3) == perspective ? 0 : 1);
    const int kt = ((attacked & 7) - 1) * 2 + ((attacked >> 3) == perspective ? 0 : 1);
    if (ka >= layout.kinds || kt >= layout.kinds) return -1;
    const int flip = perspective == White ? 0 : 56;
    const int s = from ^ flip, t = to ^ flip;
    const Bitboard below = layout.attacks[ka][s] & (square_bb(t) - 1);
    return (layout.base[ka][s] + popcount(below)) * layout.kinds + kt;
}

// The pieces of a position as bitboards and codes (colour << 3 | type, 0 empty), editable.
struct ThreatBoard {
    Bitboard colors[2] = {0, 0};
    Bitboard types[7] = {0, 0, 0, 0, 0, 0, 0};
    std::uint8_t codes[64] = {};

    static ThreatBoard of(const Position& position);
    Bitboard occupied() const { return colors[White] | colors[Black]; }
    void remove(Square square);
    void put(Color color, PieceType type, Square square);
    Bitboard attacks_of(Square square, Bitboard occupied) const;  // of the piece on square
    Bitboard attackers_to(Square square, Bitboard occupied) const;
};

// Pairs of a board whose attacker stands on `attackers` or whose attacked piece on `attacked`.
void threat_pairs(const ThreatBoard& board, Bitboard attackers, Bitboard attacked,
                  std::vector<ThreatPair>& out);

// One piece leaving `square` (remove_piece; nothing when it is empty) or arriving on it
// (put_piece, replacing any piece there) of `board`, which is edited: the pairs the edit removes
// and adds are appended to the lists (those of the piece itself, of its attackers, and of the
// sliders whose ray through the square it opens or closes).
void remove_piece(ThreatBoard& board, Square square, std::vector<ThreatPair>& removed,
                  std::vector<ThreatPair>& added);
void put_piece(ThreatBoard& board, Color color, PieceType type, Square square,
               std::vector<ThreatPair>& removed, std::vector<ThreatPair>& added);
// Drops each pair found on both lists once from each (one edit took away what another put back).
void cancel_common(std::vector<ThreatPair>& removed, std::vector<ThreatPair>& added);

// Sorted active features of T (no_king false) or TNK (true), one perspective (no offset).
void threat_features(const Position& position, Color perspective, bool no_king,
                     std::vector<int>& out);

}  // namespace latentchess::core
