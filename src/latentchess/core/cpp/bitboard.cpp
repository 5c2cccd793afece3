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
// The multipliers below are the ones the search (per-rank seeds: the ones Stockfish publishes
// for the same xorshift64* generator and search) finds; trying them first makes building the
// tables a fill (about 1 ms) instead of a search (about 30 ms of every `import
// latentchess.core._native`). A multiplier that fails the check falls back to the search, so the
// tables are correct whatever the constants.
constexpr std::uint64_t MagicSeeds[8] = {728, 10316, 55013, 32803, 12281, 15100, 16645, 255};
constexpr Bitboard RookMagics[64] = {
    0x0A80004000801220ULL, 0x8040004010002008ULL, 0x2080200010008008ULL, 0x1100100008210004ULL,
    0xC200209084020008ULL, 0x2100010004000208ULL, 0x0400081000822421ULL, 0x0200010422048844ULL,
    0x0800800080400024ULL, 0x0001402000401000ULL, 0x3000801000802001ULL, 0x4400800800100083ULL,
    0x0904802402480080ULL, 0x4040800400020080ULL, 0x0018808042000100ULL, 0x4040800080004100ULL,
    0x0040048001458024ULL, 0x00A0004000205000ULL, 0x3100808010002000ULL, 0x4825010010000820ULL,
    0x5004808008000401ULL, 0x2024818004000A00ULL, 0x0005808002000100ULL, 0x2100060004806104ULL,
    0x0080400880008421ULL, 0x4062220600410280ULL, 0x010A004A00108022ULL, 0x0000100080080080ULL,
    0x0021000500080010ULL, 0x0044000202001008ULL, 0x0000100400080102ULL, 0xC020128200040545ULL,
    0x0080002000400040ULL, 0x0000804000802004ULL, 0x0000120022004080ULL, 0x010A386103001001ULL,
    0x9010080080800400ULL, 0x8440020080800400ULL, 0x0004228824001001ULL, 0x000000490A000084ULL,
    0x0080002000504000ULL, 0x200020005000C000ULL, 0x0012088020420010ULL, 0x0010010080080800ULL,
    0x0085001008010004ULL, 0x0002000204008080ULL, 0x0040413002040008ULL, 0x0000304081020004ULL,
    0x0080204000800080ULL, 0x3008804000290100ULL, 0x1010100080200080ULL, 0x2008100208028080ULL,
    0x5000850800910100ULL, 0x8402019004680200ULL, 0x0120911028020400ULL, 0x0000008044010200ULL,
    0x0020850200244012ULL, 0x0020850200244012ULL, 0x0000102001040841ULL, 0x140900040A100021ULL,
    0x000200282410A102ULL, 0x000200282410A102ULL, 0x000200282410A102ULL, 0x4048240043802106ULL
};
constexpr Bitboard BishopMagics[64] = {
    0x40106000A1160020ULL, 0x0020010250810120ULL, 0x2010010220280081ULL, 0x002806004050C040ULL,
    0x0002021018000000ULL, 0x2001112010000400ULL, 0x0881010120218080ULL, 0x1030820110010500ULL,
    0x0000120222042400ULL, 0x2000020404040044ULL, 0x8000480094208000ULL, 0x0003422A02000001ULL,
    0x000A220210100040ULL, 0x8004820202226000ULL, 0x0018234854100800ULL, 0x0100004042101040ULL,
    0x0004001004082820ULL, 0x0010000810010048ULL, 0x1014004208081300ULL, 0x2080818802044202ULL,
    0x0040880C00A00100ULL, 0x0080400200522010ULL, 0x0001000188180B04ULL, 0x0080249202020204ULL,
    0x1004400004100410ULL, 0x00013100A0022206ULL, 0x2148500001040080ULL, 0x4241080011004300ULL,
    0x4020848004002000ULL, 0x10101380D1004100ULL, 0x0008004422020284ULL, 0x01010A1041008080ULL,
    0x0808080400082121ULL, 0x0808080400082121ULL, 0x0091128200100C00ULL, 0x0202200802010104ULL,
    0x8C0A020200440085ULL, 0x01A0008080B10040ULL, 0x0889520080122800ULL, 0x100902022202010AULL,
    0x04081A0816002000ULL, 0x0000681208005000ULL, 0x8170840041008802ULL, 0x0A00004200810805ULL,
    0x0830404408210100ULL, 0x2602208106006102ULL, 0x1048300680802628ULL, 0x2602208106006102ULL,
    0x0602010120110040ULL, 0x0941010801043000ULL, 0x000040440A210428ULL, 0x0008240020880021ULL,
    0x0400002012048200ULL, 0x00AC102001210220ULL, 0x0220021002009900ULL, 0x84440C080A013080ULL,
    0x0001008044200440ULL, 0x0004C04410841000ULL, 0x2000500104011130ULL, 0x1A0C010011C20229ULL,
    0x0044800112202200ULL, 0x0434804908100424ULL, 0x0300404822C08200ULL, 0x48081010008A2A80ULL
};

void init_magics(const int (&directions)[4][2], const Bitboard* known, Magic* magics,
                 Bitboard* table) {
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
        for (bool first = true;; first = false) {
            if (first) {
                magic.magic = known[square];
            } else {
                do {
                    magic.magic = random.sparse();
                } while (popcount((magic.magic * magic.mask) >> 56) < 6);
            }
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
    init_magics(RookDirections, RookMagics, rook_magic, rook_attacks);
    init_magics(BishopDirections, BishopMagics, bishop_magic, bishop_attacks);
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
