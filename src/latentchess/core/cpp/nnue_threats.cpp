// Threat features (T, TNK); see nnue_threats.h and latentchess/nnue/features.py.
#include "nnue_threats.h"

#include <algorithm>

namespace latentchess::core {

namespace {

// The empty-board attack set of kind ka (role * 2 + c) on square s of a perspective's board,
// where "ours" (c = 0) moves up the board as White does.
Bitboard empty_board_attacks(int ka, Square s) {
    switch (ka / 2 + 1) {
        case Pawn: return attacks_from_pawn(ka % 2 == 0 ? White : Black, s);
        case Knight: return attacks_from_knight(s);
        case Bishop: return attacks_from_bishop(s, 0);
        case Rook: return attacks_from_rook(s, 0);
        case Queen: return attacks_from_queen(s, 0);
        default: return attacks_from_king(s);
    }
}

ThreatLayout build_layout(int kinds) {
    ThreatLayout layout;
    layout.kinds = kinds;
    int triples = 0;
    for (int ka = 0; ka < 12; ++ka) {
        for (Square s = 0; s < 64; ++s) {
            layout.base[ka][s] = -1;
            if (ka >= kinds || (ka < 2 && (rank_of(s) == 0 || rank_of(s) == 7))) continue;
            layout.attacks[ka][s] = empty_board_attacks(ka, s);
            layout.base[ka][s] = triples;
            triples += popcount(layout.attacks[ka][s]);
        }
    }
    layout.size = triples * kinds;
    return layout;
}

}  // namespace

const ThreatLayout& threat_layout(bool no_king) {
    static const ThreatLayout all = build_layout(12);
    static const ThreatLayout no_kings = build_layout(10);
    return no_king ? no_kings : all;
}

ThreatBoard ThreatBoard::of(const Position& position) {
    ThreatBoard board;
    board.colors[White] = position.pieces(White);
    board.colors[Black] = position.pieces(Black);
    for (int type = Pawn; type <= King; ++type) board.types[type] = position.pieces(PieceType(type));
    Bitboard occupied = board.occupied();
    while (occupied) {
        const Square square = pop_lsb(occupied);
        board.codes[square] =
            static_cast<std::uint8_t>(position.color_on(square) << 3 | position.piece_type_on(square));
    }
    return board;
}

void ThreatBoard::remove(Square square) {
    const int code = codes[square];
    if (code == 0) return;
    colors[code >> 3] &= ~square_bb(square);
    types[code & 7] &= ~square_bb(square);
    codes[square] = 0;
}

void ThreatBoard::put(Color color, PieceType type, Square square) {
    remove(square);
    colors[color] |= square_bb(square);
    types[type] |= square_bb(square);
    codes[square] = static_cast<std::uint8_t>(color << 3 | type);
}

Bitboard ThreatBoard::attacks_of(Square square, Bitboard occupied) const {
    const int code = codes[square];
    switch (code & 7) {
        case Pawn: return attacks_from_pawn(Color(code >> 3), square);
        case Knight: return attacks_from_knight(square);
        case Bishop: return attacks_from_bishop(square, occupied);
        case Rook: return attacks_from_rook(square, occupied);
        case Queen: return attacks_from_queen(square, occupied);
        case King: return attacks_from_king(square);
        default: return 0;
    }
}

Bitboard ThreatBoard::attackers_to(Square square, Bitboard occupied) const {
    const Bitboard diagonal = types[Bishop] | types[Queen];
    const Bitboard straight = types[Rook] | types[Queen];
    return (attacks_from_pawn(Black, square) & types[Pawn] & colors[White]) |
           (attacks_from_pawn(White, square) & types[Pawn] & colors[Black]) |
           (attacks_from_knight(square) & types[Knight]) | (attacks_from_king(square) & types[King]) |
           (attacks_from_bishop(square, occupied) & diagonal) |
           (attacks_from_rook(square, occupied) & straight);
}

void threat_pairs(const ThreatBoard& board, Bitboard attackers, Bitboard attacked,
                  std::vector<ThreatPair>& out) {
    const Bitboard occupied = board.occupied();
    Bitboard pieces = attackers & occupied;
    while (pieces) {
        const Square from = pop_lsb(pieces);
        Bitboard targets = board.attacks_of(from, occupied) & occupied;
        while (targets) {
            const Square to = pop_lsb(targets);
            out.push_back(make_threat_pair(board.codes[from], from, board.codes[to], to));
        }
    }
    Bitboard squares = attacked & occupied;
    while (squares) {  // the other attackers of the attacked squares
        const Square to = pop_lsb(squares);
        Bitboard from_squares = board.attackers_to(to, occupied) & ~attackers;
        while (from_squares) {
            const Square from = pop_lsb(from_squares);
            out.push_back(make_threat_pair(board.codes[from], from, board.codes[to], to));
        }
    }
}

void remove_piece(ThreatBoard& board, Square square, std::vector<ThreatPair>& removed,
                  std::vector<ThreatPair>& added) {
    const int code = board.codes[square];
    if (code == 0) return;
    const Bitboard occupied = board.occupied();
    const Bitboard after = occupied ^ square_bb(square);
    Bitboard targets = board.attacks_of(square, occupied) & occupied;
    while (targets) {
        const Square to = pop_lsb(targets);
        removed.push_back(make_threat_pair(code, square, board.codes[to], to));
    }
    const Bitboard sliders = board.types[Bishop] | board.types[Rook] | board.types[Queen];
    Bitboard attackers = board.attackers_to(square, occupied);
    while (attackers) {
        const Square from = pop_lsb(attackers);
        removed.push_back(make_threat_pair(board.codes[from], from, code, square));
        if (!(sliders & square_bb(from))) continue;
        // The ray through the emptied square now reaches the next piece beyond it.
        Bitboard beyond = board.attacks_of(from, after) & ~board.attacks_of(from, occupied) & after;
        while (beyond) {
            const Square to = pop_lsb(beyond);
            added.push_back(make_threat_pair(board.codes[from], from, board.codes[to], to));
        }
    }
    board.remove(square);
}

void put_piece(ThreatBoard& board, Color color, PieceType type, Square square,
               std::vector<ThreatPair>& removed, std::vector<ThreatPair>& added) {
    remove_piece(board, square, removed, added);  // nothing where the square is empty
    const Bitboard before = board.occupied();
    board.put(color, type, square);
    const int code = board.codes[square];
    const Bitboard occupied = board.occupied();
    const Bitboard sliders = board.types[Bishop] | board.types[Rook] | board.types[Queen];
    Bitboard attackers = board.attackers_to(square, occupied);
    while (attackers) {
        const Square from = pop_lsb(attackers);
        added.push_back(make_threat_pair(board.codes[from], from, code, square));
        if (!(sliders & square_bb(from))) continue;
        // The ray through the filled square no longer reaches the piece beyond it.
        Bitboard cut = board.attacks_of(from, before) & ~board.attacks_of(from, occupied) & before;
        while (cut) {
            const Square to = pop_lsb(cut);
            removed.push_back(make_threat_pair(board.codes[from], from, board.codes[to], to));
        }
    }
    Bitboard targets = board.attacks_of(square, occupied) & occupied;
    while (targets) {
        const Square to = pop_lsb(targets);
        added.push_back(make_threat_pair(code, square, board.codes[to], to));
    }
}

void cancel_common(std::vector<ThreatPair>& removed, std::vector<ThreatPair>& added) {
    std::size_t kept = 0;
    for (const ThreatPair pair : removed) {
        const auto again = std::find(added.begin(), added.end(), pair);
        if (again == added.end()) {
            removed[kept++] = pair;
        } else {
            *again = added.back();
            added.pop_back();
        }
    }
    removed.resize(kept);
}

void threat_features(const Position& position, Color perspective, bool no_king,
                     std::vector<int>& out) {
    const ThreatLayout& layout = threat_layout(no_king);
    const ThreatBoard board = ThreatBoard::of(position);
    std::vector<ThreatPair> pairs;
    threat_pairs(board, board.occupied(), 0, pairs);
    out.clear();
    for (const ThreatPair pair : pairs) {
        const int feature = threat_feature(layout, perspective, pair);
        if (feature >= 0) out.push_back(feature);
    }
    std::sort(out.begin(), out.end());
}

}  // namespace latentchess::core
