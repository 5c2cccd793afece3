// Legal move generation (see movegen.h for the invariants).
#include "movegen.h"

#include <cassert>

namespace latentchess::core {

namespace {

enum class Kind { All, Captures, Quiets };

template <Kind kind>
void add_promotions(MoveList& moves, Square from, Square to) {
    if constexpr (kind != Kind::Quiets) {
        moves.push(Move(from, to, Queen));
        moves.push(Move(from, to, Rook));
        moves.push(Move(from, to, Bishop));
        moves.push(Move(from, to, Knight));
    }
}

// Pawn moves to `targets` (check evasion mask), each pinned pawn limited to its pin line;
// en passant is checked in full.
template <Kind kind>
void generate_pawn_moves(const Position& position, MoveList& moves, Bitboard targets,
                         Bitboard pinned, Square king) {
    const Color us = position.side_to_move();
    const Bitboard occupied = position.occupied();
    const Bitboard enemies = position.pieces(~us);
    const Bitboard promotion_rank = us == White ? Rank8Bits : Rank1Bits;
    const Bitboard double_rank = us == White ? rank_bb(3) : rank_bb(4);
    Bitboard pawns = position.pieces(us, Pawn);
    while (pawns) {
        const Square from = pop_lsb(pawns);
        const Bitboard allowed = (pinned & square_bb(from)) ? line_bb(king, from) : ~Bitboard{0};
        const Bitboard from_bb = square_bb(from);
        const Bitboard single = (us == White ? shift_north(from_bb) : shift_south(from_bb)) & ~occupied;
        const Bitboard twice =
            (us == White ? shift_north(single) : shift_south(single)) & ~occupied & double_rank;
        const Bitboard captures = attacks_from_pawn(us, from) & enemies;
        Bitboard promotions = (single | captures) & promotion_rank & targets & allowed;
        while (promotions) add_promotions<kind>(moves, from, pop_lsb(promotions));
        if constexpr (kind != Kind::Captures) {
            Bitboard pushes = (single | twice) & ~promotion_rank & targets & allowed;
            while (pushes) moves.push(Move(from, pop_lsb(pushes)));
        }
        if constexpr (kind != Kind::Quiets) {
            Bitboard plain = captures & ~promotion_rank & targets & allowed;
            while (plain) moves.push(Move(from, pop_lsb(plain)));
        }
    }
    if constexpr (kind != Kind::Quiets) {
        const Square ep = position.en_passant_square();
        if (ep != NoSquare) {
            Bitboard capturers = attacks_from_pawn(~us, ep) & position.pieces(us, Pawn);
            while (capturers) {
                const Square from = pop_lsb(capturers);
                if (position.en_passant_is_legal(from, ep)) moves.push(Move(from, ep));
            }
        }
    }
}

template <Kind kind>
void generate_castling(const Position& position, MoveList& moves) {
    const Color us = position.side_to_move();
    const int base = us == White ? 0 : 2;
    const int rights = position.castling_rights() >> base;
    if (!(rights & 3)) return;
    for (int side = 0; side < 2; ++side)  // kingside first, then queenside
        if ((rights & (1 << side)) && position.can_castle(us, base + side))
            moves.push(position.castling_move(base + side));
}

template <Kind kind>
void generate(const Position& position, MoveList& moves) {
    const Color us = position.side_to_move();
    const Square king = position.king_square(us);
    const Bitboard ours = position.pieces(us);
    const Bitboard enemies = position.pieces(~us);
    const Bitboard occupied = position.occupied();
    const Bitboard checkers = position.checkers();

    // Destinations allowed for non-king moves of this kind.
    Bitboard kind_targets = kind == Kind::All        ? ~ours
                            : kind == Kind::Captures ? enemies
                                                     : ~occupied;
    // King moves: to squares not attacked once the king has left its square.
    Bitboard king_targets = attacks_from_king(king) & kind_targets;
    const Bitboard without_king = occupied ^ square_bb(king);
    while (king_targets) {
        const Square to = pop_lsb(king_targets);
        if (!position.is_attacked_by(~us, to, without_king)) moves.push(Move(king, to));
    }
    if (more_than_one(checkers)) return;

    Bitboard targets = ~ours;
    if (checkers) targets = between_bb(king, lsb(checkers)) | checkers;
    const Bitboard pinned = position.blockers_for_king(us) & ours;

    // Pawns filter by kind themselves (promotions count as captures).
    generate_pawn_moves<kind>(position, moves, targets, pinned, king);

    const Bitboard piece_targets = targets & kind_targets;
    for (const PieceType type : {Knight, Bishop, Rook, Queen}) {
        Bitboard pieces = position.pieces(us, type);
        if (type == Knight) pieces &= ~pinned;  // a pinned knight can never move
        while (pieces) {
            const Square from = pop_lsb(pieces);
            Bitboard attacks = type == Knight   ? attacks_from_knight(from)
                               : type == Bishop ? attacks_from_bishop(from, occupied)
                               : type == Rook   ? attacks_from_rook(from, occupied)
                                                : attacks_from_queen(from, occupied);
            attacks &= piece_targets;
            if (pinned & square_bb(from)) attacks &= line_bb(king, from);
            while (attacks) moves.push(Move(from, pop_lsb(attacks)));
        }
    }
    if constexpr (kind != Kind::Captures) {
        if (!checkers) generate_castling<kind>(position, moves);
    }
    assert(moves.size <= 256);
}

}  // namespace

void generate_legal_moves(const Position& position, MoveList& moves) {
    generate<Kind::All>(position, moves);
}

void generate_legal_captures(const Position& position, MoveList& moves) {
    generate<Kind::Captures>(position, moves);
}

void generate_legal_quiets(const Position& position, MoveList& moves) {
    generate<Kind::Quiets>(position, moves);
}

bool has_legal_move(const Position& position) {
    MoveList moves;
    generate<Kind::All>(position, moves);
    return moves.size > 0;
}

}  // namespace latentchess::core
