// Construction of the attack tables (see bitboard.h for the invariants).
#include "bitboard.h"

#include <memory>
#include <vector>

namespace latentchess::core {

namespace {

constexpr int RookDirections[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
constexpr int BishopDirections[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

bool on_board(int file, int rank) { return file >= 0 && file < 8 && rank >= 0 && rank < 8; }

// Slow reference: the squares a slider on `square` reaches, stopping at the first occupied square.
Bitboard sliding_attacks(const int (&directions)[4][2], Square square, Bitboard occupied) {
    Bitboard attacks = 0;
    for (const auto& direction : directions) {
        int file = file_of(square) + direction[0];
        int rank = rank_of(square) + direction[1];
        while (on_board(file, rank)) {
            const Bitboard bit = square_bb(make_square(file, rank));
            attacks |= bit;
            if (occupied & bit) break;
            file += direction[0];
            rank += direction[1];
        }
    }
    return attacks;
}

Bitboard step_attacks(Square square, const int (*steps)[2], int count) {
    Bitboard attacks = 0;
    for (int i = 0; i < count; ++i) {
        const int file = file_of(square) + steps[i][0];
        const int rank = rank_of(square) + steps[i][1];
        if (on_board(file, rank)) attacks |= square_bb(make_square(file, rank));
    }
    return attacks;
}

// xorshift64*: a small deterministic generator for the magic search.
class Random {
  public:
    explicit Random(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        state_ ^= state_ >> 12;
        state_ ^= state_ << 25;
        state_ ^= state_ >> 27;
        return state_ * 2685821657736338717ULL;
    }
    std::uint64_t sparse() { return next() & next() & next(); }

  private:
    std::uint64_t state_;
};

// Find a magic for every square and fill `table`; `magics[s].offset` indexes into `table`.
// Seeds of the magic search, one per rank: with them every square's multiplier is found within a
// few hundred tries, so the tables are built in milliseconds at load time (one fixed seed for all
// squares took about 170 ms, most of `import latentchess.core._native`). They are the per-rank
// seeds Stockfish publishes for the same xorshift64* generator and search (src/bitboard.cpp,
// 64-bit row); any seeds give correct tables, these only make the search short.
constexpr std::uint64_t MagicSeeds[8] = {728, 10316, 55013, 32803, 12281, 15100, 16645, 255};

void init_magics(const int (&directions)[4][2], Magic* magics, Bitboard* table) {
    std::vector<Bitboard> occupancy(4096), reference(4096);
    std::vector<int> epoch(4096, 0);
    int attempt = 0;
    unsigned offset = 0;
    for (Square square = 0; square < 64; ++square) {
        const Bitboard edges = ((Rank1Bits | Rank8Bits) & ~rank_bb(rank_of(square))) |
                               ((FileABits | FileHBits) & ~file_bb(file_of(square)));
        Random random(MagicSeeds[rank_of(square)]);
        Magic& magic = magics[square];
        magic.mask = sliding_attacks(directions, square, 0) & ~edges;
        magic.shift = 64 - popcount(magic.mask);
        magic.offset = offset;
        // Enumerate every subset of the mask (carry-rippler).
        int size = 0;
        Bitboard subset = 0;
        do {
            occupancy[size] = subset;
            reference[size] = sliding_attacks(directions, square, subset);
            ++size;
            subset = (subset - magic.mask) & magic.mask;
        } while (subset);
        for (;;) {
            do {
                magic.magic = random.sparse();
            } while (popcount((magic.magic * magic.mask) >> 56) < 6);
            ++attempt;
            bool ok = true;
            for (int i = 0; i < size && ok; ++i) {
                const unsigned index = magic.index(occupancy[i]);
                if (epoch[index - offset] < attempt) {
                    epoch[index - offset] = attempt;
                    table[index] = reference[i];
                } else if (table[index] != reference[i]) {
                    ok = false;
                }
            }
            if (ok) break;
        }
        offset += static_cast<unsigned>(size);
    }
}

}  // namespace

std::string Move::to_uci() const {
    if (is_none()) return "0000";
    std::string text;
    text += static_cast<char>('a' + file_of(from()));
    text += static_cast<char>('1' + rank_of(from()));
    text += static_cast<char>('a' + file_of(to()));
    text += static_cast<char>('1' + rank_of(to()));
    if (promotion() != NoPieceType) text += " pnbrqk"[promotion()];
    return text;
}

AttackTables::AttackTables() {
    constexpr int KnightSteps[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                       {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    constexpr int KingSteps[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                     {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    constexpr int WhitePawnSteps[2][2] = {{-1, 1}, {1, 1}};
    constexpr int BlackPawnSteps[2][2] = {{-1, -1}, {1, -1}};
    for (Square square = 0; square < 64; ++square) {
        knight[square] = step_attacks(square, KnightSteps, 8);
        king[square] = step_attacks(square, KingSteps, 8);
        pawn[White][square] = step_attacks(square, WhitePawnSteps, 2);
        pawn[Black][square] = step_attacks(square, BlackPawnSteps, 2);
    }
    init_magics(RookDirections, rook_magic, rook_attacks);
    init_magics(BishopDirections, bishop_magic, bishop_attacks);
    for (Square a = 0; a < 64; ++a) {
        for (Square b = 0; b < 64; ++b) {
            between[a][b] = 0;
            line[a][b] = 0;
            if (a == b) continue;
            for (const auto* directions : {&RookDirections, &BishopDirections}) {
                const Bitboard from_a = sliding_attacks(*directions, a, 0);
                if (from_a & square_bb(b)) {
                    line[a][b] = (from_a & sliding_attacks(*directions, b, 0)) | square_bb(a) |
                                 square_bb(b);
                    between[a][b] = sliding_attacks(*directions, a, square_bb(b)) &
                                    sliding_attacks(*directions, b, square_bb(a));
                }
            }
        }
    }
}

namespace {
// Heap-allocated (about 1 MB) and never freed: it lives as long as the process.
const AttackTables* const table_instance = new AttackTables();
}  // namespace

const AttackTables& attack_tables = *table_instance;

}  // namespace latentchess::core
