// NNUE input feature sets (Lombardo 2024), equal to latentchess.nnue.features (the reference).
//
// Invariants:
//  * A feature set is a list of blocks; block b's indices start at the sum of the sizes before it.
//  * Each perspective sees the board flipped vertically for Black, colours swapped: c = 0 "ours".
//    role = piece type - 1 (P N B R Q K = 0..5); file, rank in the perspective's board.
//  * Every block of the reference is here: ALL, H, V, D1, D2, PH, PV, the mobility blocks MB
//    and MC, KA and KA9 (ALL in king buckets), and the threat blocks T and TNK (nnue_threats.h),
//    which come last in a set (parse refuses them elsewhere). Mobility is a colour's legal destinations as if it were to move (its own king left
//    safe; a pawn's single push and captures, en passant only for the side to move; castling as
//    the king's move to its target square, g or c file, in Chess960 too), computed from bitboards without making moves.
//  * active_features returns each active feature once, sorted ascending.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "position.h"
#include "types.h"

namespace latentchess::core {

enum class FeatureBlock : int { All, H, V, D1, D2, PH, PV, MB, MC, KA, KA9, T, TNK };

inline bool is_threat_block(FeatureBlock block) {
    return block == FeatureBlock::T || block == FeatureBlock::TNK;
}

// The king-bucketed blocks (not in the thesis): copies of ALL, the copy picked by the
// perspective's own king on the perspective's board. A layout is drawn as a board is printed,
// rank 8 first, file a first, as latentchess.nnue.features.KING_BUCKET_LAYOUTS.
struct KingBucketLayout {
    int buckets;
    std::array<std::array<std::int8_t, 8>, 8> rows;  // rows[7 - rank][file]
};
inline constexpr KingBucketLayout kKingBucketsKA = {4, {{{2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {2, 2, 2, 2, 3, 3, 3, 3},
                                                         {0, 0, 0, 0, 1, 1, 1, 1}}}};
inline constexpr KingBucketLayout kKingBucketsKA9 = {9, {{{7, 7, 7, 7, 8, 8, 8, 8},
                                                          {7, 7, 7, 7, 8, 8, 8, 8},
                                                          {7, 7, 7, 7, 8, 8, 8, 8},
                                                          {7, 7, 7, 7, 8, 8, 8, 8},
                                                          {5, 5, 5, 5, 6, 6, 6, 6},
                                                          {5, 5, 5, 5, 6, 6, 6, 6},
                                                          {3, 3, 3, 3, 4, 4, 4, 4},
                                                          {0, 0, 0, 0, 1, 2, 2, 2}}}};

// The layout of a king-bucketed block; nullptr for any other block.
inline const KingBucketLayout* king_bucket_layout(FeatureBlock block) {
    if (block == FeatureBlock::KA) return &kKingBucketsKA;
    if (block == FeatureBlock::KA9) return &kKingBucketsKA9;
    return nullptr;
}

// MC's count caps per role (P N B R Q K), as the thesis's table.
inline constexpr int kMobilityCaps[6] = {8, 15, 16, 25, 25, 8};

struct FeatureSet {
    std::vector<FeatureBlock> blocks;
    std::vector<int> offsets;  // running offset of each block
    int size = 0;              // N, the number of features

    // "ALL+H+V" (case-sensitive upper case, as the Python side writes it); throws
    // std::invalid_argument naming the text for an unknown or unsupported block, a repeated
    // one, or a threat block that is not the last.
    static FeatureSet parse(std::string_view text);
    std::string name() const;
    bool only_all() const { return blocks.size() == 1 && blocks[0] == FeatureBlock::All; }
};

int feature_block_size(FeatureBlock block);

// ALL's index of a piece (colour, type) on square, from perspective's view (no offset).
inline int all_feature(Color perspective, Color color, PieceType type, Square square) {
    const int file = file_of(square);
    const int rank = perspective == White ? rank_of(square) : 7 - rank_of(square);
    return (file * 8 + rank) * 12 + (type - 1) * 2 + (color == perspective ? 0 : 1);
}

// The layout's bucket for the perspective's own king on king_square.
inline int king_bucket(const KingBucketLayout& layout, Color perspective, Square king_square) {
    const int rank = perspective == White ? rank_of(king_square) : 7 - rank_of(king_square);
    return layout.rows[7 - rank][file_of(king_square)];
}

// A king block's index of a piece for the perspective whose king is in `bucket` (no offset).
inline int king_bucket_feature(Color perspective, int bucket, Color color, PieceType type,
                               Square square) {
    return bucket * 768 + all_feature(perspective, color, type, square);
}

// Union of the legal destination squares of `color`'s pieces of each type (index = PieceType),
// as if `color` were to move.
std::array<Bitboard, 7> mobility_destinations(const Position& position, Color color);

// Sorted active features of one block (indices local to the block).
void block_features(const Position& position, Color perspective, FeatureBlock block,
                    std::vector<int>& out);

// Sorted active features of the whole set (with offsets), one perspective.
std::vector<int> active_features(const Position& position, Color perspective,
                                 const FeatureSet& features);

}  // namespace latentchess::core
