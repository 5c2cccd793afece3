// NNUE input feature sets; see nnue_features.h and latentchess/nnue/features.py.
#include "nnue_features.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "bitboard.h"
#include "nnue_threats.h"

namespace latentchess::core {

namespace {

struct BlockName {
    const char* name;
    FeatureBlock block;
    int size;
};

constexpr std::array<BlockName, 13> kBlocks = {{
    {"ALL", FeatureBlock::All, 768},
    {"H", FeatureBlock::H, 96},
    {"V", FeatureBlock::V, 96},
    {"D1", FeatureBlock::D1, 180},
    {"D2", FeatureBlock::D2, 180},
    {"PH", FeatureBlock::PH, 1152},
    {"PV", FeatureBlock::PV, 1152},
    {"MB", FeatureBlock::MB, 768},
    {"MC", FeatureBlock::MC, 206},
    {"KA", FeatureBlock::KA, kKingBucketsKA.buckets * 768},
    {"KA9", FeatureBlock::KA9, kKingBucketsKA9.buckets * 768},
    {"T", FeatureBlock::T, 7504 * 12},  // nnue_threats.h; checked against its layout in parse
    {"TNK", FeatureBlock::TNK, 6664 * 10},
}};

// MC's first index of each role: 2 * the sum of (cap + 1) over the roles before it.
constexpr std::array<int, 6> kMobilityOffsets = {0, 18, 50, 84, 136, 188};

// grid[file][rank] = role * 2 + c in the perspective's board, or -1.
using Grid = std::array<std::array<int, 8>, 8>;

Grid make_grid(const Position& position, Color perspective) {
    Grid grid;
    for (auto& column : grid) column.fill(-1);
    Bitboard occupied = position.occupied();
    while (occupied) {
        const Square square = pop_lsb(occupied);
        const int file = file_of(square);
        const int rank = perspective == White ? rank_of(square) : 7 - rank_of(square);
        const int c = position.color_on(square) == perspective ? 0 : 1;
        grid[file][rank] = (position.piece_type_on(square) - 1) * 2 + c;
    }
    return grid;
}

// Pairs of consecutive occupied squares along each line; line_of(line, i) -> (file, rank).
template <typename Cell>
void pairs(const Grid& grid, Cell cell, std::vector<int>& out) {
    for (int line = 0; line < 8; ++line) {
        int previous = -1;
        for (int i = 0; i < 8; ++i) {
            const int kind = cell(grid, line, i);
            if (kind < 0) continue;
            if (previous >= 0) {
                const int r1 = previous >> 1, c1 = previous & 1, r2 = kind >> 1, c2 = kind & 1;
                out.push_back(line * 144 + r1 * 24 + c1 * 12 + r2 * 2 + c2);
            }
            previous = kind;
        }
    }
}

}  // namespace

int feature_block_size(FeatureBlock block) { return kBlocks[static_cast<int>(block)].size; }

FeatureSet FeatureSet::parse(std::string_view text) {
    FeatureSet set;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t plus = text.find('+', start);
        const std::string_view part =
            text.substr(start, plus == std::string_view::npos ? std::string_view::npos : plus - start);
        const auto found = std::find_if(kBlocks.begin(), kBlocks.end(),
                                        [&](const BlockName& b) { return part == b.name; });
        if (found == kBlocks.end()) {
            throw std::invalid_argument("feature set '" + std::string(text) +
                                        "': unknown block '" + std::string(part) +
                                        "' (blocks: ALL H V D1 D2 PH PV MB MC KA KA9 T TNK)");
        }
        if (!set.blocks.empty() && is_threat_block(set.blocks.back())) {
            throw std::invalid_argument("feature set '" + std::string(text) +
                                        "': a threat block (T, TNK) must come last, and only one");
        }
        if (is_threat_block(found->block) &&
            threat_layout(found->block == FeatureBlock::TNK).size != found->size) {
            throw std::logic_error("threat layout size mismatch");
        }
        if (std::find(set.blocks.begin(), set.blocks.end(), found->block) != set.blocks.end()) {
            throw std::invalid_argument("feature set '" + std::string(text) + "' repeats a block");
        }
        set.blocks.push_back(found->block);
        set.offsets.push_back(set.size);
        set.size += found->size;
        if (plus == std::string_view::npos) break;
        start = plus + 1;
    }
    return set;
}

std::string FeatureSet::name() const {
    std::string out;
    for (const FeatureBlock block : blocks) {
        if (!out.empty()) out += '+';
        out += kBlocks[static_cast<int>(block)].name;
    }
    return out;
}

std::array<Bitboard, 7> mobility_destinations(const Position& position, Color color) {
    std::array<Bitboard, 7> out{};
    const Square king = position.king_square(color);
    const Bitboard ours = position.pieces(color);
    const Bitboard enemies = position.pieces(~color);
    const Bitboard occupied = position.occupied();
    const Bitboard checkers = position.attackers_to(king, occupied) & enemies;

    // The king: squares not attacked once it has left its square (sliders see through it).
    Bitboard targets = attacks_from_king(king) & ~ours;
    while (targets) {
        const Square to = pop_lsb(targets);
        if (!position.is_attacked_by(~color, to, occupied ^ square_bb(king)))
            out[King] |= square_bb(to);
    }
    // Castling: the king's target square (g or c file), in standard chess and Chess960 alike.
    const int base = color == White ? 0 : 2;
    if (!checkers && (position.castling_rights() >> base & 3)) {
        for (int side = 0; side < 2; ++side)
            if (position.can_castle(color, base + side))
                out[King] |= square_bb(make_square(side == 0 ? 6 : 2, rank_of(king)));
    }
    if (more_than_one(checkers)) return out;  // double check: only the king moves

    // The others: block or capture a single checker; a pinned piece stays on its pin line.
    const Bitboard check_mask = checkers ? between_bb(king, lsb(checkers)) | checkers : ~Bitboard{0};
    const Bitboard pinned = position.blockers_for_king(color) & ours;
    const auto allowed = [&](Square from) {
        return check_mask & ((pinned & square_bb(from)) ? line_bb(king, from) : ~Bitboard{0});
    };
    for (PieceType type : {Knight, Bishop, Rook, Queen}) {
        Bitboard pieces = position.pieces(color, type);
        while (pieces) {
            const Square from = pop_lsb(pieces);
            Bitboard attacks = 0;
            switch (type) {
                case Knight: attacks = attacks_from_knight(from); break;
                case Bishop: attacks = attacks_from_bishop(from, occupied); break;
                case Rook: attacks = attacks_from_rook(from, occupied); break;
                default: attacks = attacks_from_queen(from, occupied); break;
            }
            out[type] |= attacks & ~ours & allowed(from);
        }
    }
    const bool to_move = position.side_to_move() == color;
    const Square en_passant = position.en_passant_square();
    Bitboard pawns = position.pieces(color, Pawn);
    while (pawns) {
        const Square from = pop_lsb(pawns);
        const Square push = color == White ? from + 8 : from - 8;  // no pawn stands on a last rank
        const Bitboard captures = attacks_from_pawn(color, from);
        Bitboard reach = captures & enemies;
        if (!(occupied & square_bb(push))) reach |= square_bb(push);
        out[Pawn] |= reach & allowed(from);
        // En passant only for the side to move; checked in full (it empties two squares).
        if (to_move && en_passant != NoSquare && (captures & square_bb(en_passant)) &&
            position.en_passant_is_legal(from, en_passant))
            out[Pawn] |= square_bb(en_passant);
    }
    return out;
}

void block_features(const Position& position, Color perspective, FeatureBlock block,
                    std::vector<int>& out) {
    out.clear();
    if (block == FeatureBlock::MB || block == FeatureBlock::MC) {
        for (const Color color : {White, Black}) {
            const int c = color == perspective ? 0 : 1;
            const std::array<Bitboard, 7> destinations = mobility_destinations(position, color);
            for (int role = 0; role < 6; ++role) {
                Bitboard squares = destinations[role + 1];
                if (block == FeatureBlock::MC) {
                    const int count = std::min(popcount(squares), kMobilityCaps[role]);
                    out.push_back(kMobilityOffsets[role] + c * (kMobilityCaps[role] + 1) + count);
                    continue;
                }
                while (squares) {
                    const Square square = pop_lsb(squares);
                    const int rank = perspective == White ? rank_of(square) : 7 - rank_of(square);
                    out.push_back((file_of(square) * 8 + rank) * 12 + role * 2 + c);
                }
            }
        }
        std::sort(out.begin(), out.end());
        return;
    }
    if (is_threat_block(block)) {
        threat_features(position, perspective, block == FeatureBlock::TNK, out);
        return;
    }
    if (const KingBucketLayout* layout = king_bucket_layout(block)) {
        const int bucket = king_bucket(*layout, perspective, position.king_square(perspective));
        Bitboard occupied = position.occupied();
        while (occupied) {
            const Square square = pop_lsb(occupied);
            out.push_back(king_bucket_feature(perspective, bucket, position.color_on(square),
                                              position.piece_type_on(square), square));
        }
        std::sort(out.begin(), out.end());
        return;
    }
    if (block == FeatureBlock::All) {
        Bitboard occupied = position.occupied();
        while (occupied) {
            const Square square = pop_lsb(occupied);
            out.push_back(all_feature(perspective, position.color_on(square),
                                      position.piece_type_on(square), square));
        }
        std::sort(out.begin(), out.end());
        return;
    }
    const Grid grid = make_grid(position, perspective);
    if (block == FeatureBlock::PH) {
        pairs(grid, [](const Grid& g, int rank, int file) { return g[file][rank]; }, out);
    } else if (block == FeatureBlock::PV) {
        pairs(grid, [](const Grid& g, int file, int rank) { return g[file][rank]; }, out);
    } else {
        for (int file = 0; file < 8; ++file) {
            for (int rank = 0; rank < 8; ++rank) {
                const int kind = grid[file][rank];
                if (kind < 0) continue;
                int line = 0;
                switch (block) {
                    case FeatureBlock::H: line = file; break;
                    case FeatureBlock::V: line = rank; break;
                    case FeatureBlock::D1: line = file + rank; break;
                    default: line = file + 7 - rank; break;
                }
                out.push_back(line * 12 + kind);
            }
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
}

std::vector<int> active_features(const Position& position, Color perspective,
                                 const FeatureSet& features) {
    std::vector<int> out, part;
    for (std::size_t b = 0; b < features.blocks.size(); ++b) {
        block_features(position, perspective, features.blocks[b], part);
        for (const int index : part) out.push_back(index + features.offsets[b]);
    }
    return out;
}

}  // namespace latentchess::core
