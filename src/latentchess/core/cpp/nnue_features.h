// NNUE input feature sets (Lombardo 2024), equal to latentchess.nnue.features (the reference).
//
// Invariants:
//  * A feature set is a list of blocks; block b's indices start at the sum of the sizes before it.
//  * Each perspective sees the board flipped vertically for Black, colours swapped: c = 0 "ours".
//    role = piece type - 1 (P N B R Q K = 0..5); file, rank in the perspective's board.
//  * ALL, H, V, D1, D2, PH, PV are computed here; MB and MC (mobility) are not in the native core
//    (their networks are trained and evaluated in Python only); parsing them is an error.
//  * active_features returns each active feature once, sorted ascending.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "position.h"
#include "types.h"

namespace latentchess::core {

enum class FeatureBlock : int { All, H, V, D1, D2, PH, PV };

struct FeatureSet {
    std::vector<FeatureBlock> blocks;
    std::vector<int> offsets;  // running offset of each block
    int size = 0;              // N, the number of features

    // "ALL+H+V" (case-sensitive upper case, as the Python side writes it); throws
    // std::invalid_argument naming the text for an unknown or unsupported block.
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

// Sorted active features of one block (indices local to the block).
void block_features(const Position& position, Color perspective, FeatureBlock block,
                    std::vector<int>& out);

// Sorted active features of the whole set (with offsets), one perspective.
std::vector<int> active_features(const Position& position, Color perspective,
                                 const FeatureSet& features);

}  // namespace latentchess::core
