// Position: FEN in/out, make/unmake, attacks and draw rules (see position.h for invariants).
#include "position.h"

#include <cassert>

#include "fen.h"
#include "movegen.h"
#include "zobrist.h"

namespace latentchess::core {

namespace {

constexpr std::string_view PieceLetters = " PNBRQK  pnbrqk";

// Castling rights that survive a move touching `square` (from or to).
constexpr std::array<int, 64> make_castling_masks() {
    std::array<int, 64> masks{};
    for (int square = 0; square < 64; ++square) masks[square] = AllCastling;
    masks[4] = AllCastling & ~(WhiteKingside | WhiteQueenside);    // e1
    masks[7] = AllCastling & ~WhiteKingside;                       // h1
    masks[0] = AllCastling & ~WhiteQueenside;                      // a1
    masks[60] = AllCastling & ~(BlackKingside | BlackQueenside);   // e8
    masks[63] = AllCastling & ~BlackKingside;                      // h8
    masks[56] = AllCastling & ~BlackQueenside;                     // a8
    return masks;
}
constexpr std::array<int, 64> CastlingMasks = make_castling_masks();

}  // namespace

Position Position::start() {
    return from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
}

Position Position::from_fen(std::string_view fen) {
    const FenFields fields = split_fen(fen);
    Position position;
    position.states_.reserve(256);
    position.states_.emplace_back();
    int rank = 7, file = 0;
    for (const char c : fields.placement) {
        if (c == '/') {
            --rank;
            file = 0;
        } else if (c >= '1' && c <= '8') {
            file += c - '0';
        } else {
            const std::size_t index = PieceLetters.find(c);
            position.put_piece(Color(index >= 8), PieceType(index & 7), make_square(file, rank));
            ++file;
        }
    }
    // What the tokenizer accepts but a board cannot play.
    const auto refuse = [&](const std::string& problem) { throw FenError(std::string(fen), problem); };
    for (const Color color : {White, Black}) {
        const char* name = color == White ? "white" : "black";
        const int kings = popcount(position.pieces(color, King));
        if (kings != 1)
            refuse("expected one " + std::string(name) + " king, found " + std::to_string(kings));
        if (popcount(position.pieces(color)) > 16) refuse(std::string("more than 16 ") + name + " pieces");
        const int pawns = popcount(position.pieces(color, Pawn));
        if (pawns > 8) refuse(std::string("more than 8 ") + name + " pawns");
        const int promoted = std::max(0, popcount(position.pieces(color, Queen)) - 1) +
                             std::max(0, popcount(position.pieces(color, Rook)) - 2) +
                             std::max(0, popcount(position.pieces(color, Bishop)) - 2) +
                             std::max(0, popcount(position.pieces(color, Knight)) - 2);
        if (promoted > 8 - pawns)
            refuse(std::string("more ") + name + " pieces than promotions of its missing pawns allow");
    }
    if (position.pieces(Pawn) & (Rank1Bits | Rank8Bits)) refuse("a pawn on the first or eighth rank");

    position.side_ = fields.side == "w" ? White : Black;
    StateInfo& state = position.mutable_state();
    int rights = 0;
    for (const char c : fields.castling) {
        if (c == 'K') rights |= WhiteKingside;
        if (c == 'Q') rights |= WhiteQueenside;
        if (c == 'k') rights |= BlackKingside;
        if (c == 'q') rights |= BlackQueenside;
    }
    // Clean the rights as python-chess does: king on e1/e8, rook on its corner.
    const auto has = [&](Color color, PieceType type, Square square) {
        return (position.pieces(color, type) & square_bb(square)) != 0;
    };
    if (!has(White, King, 4)) rights &= ~(WhiteKingside | WhiteQueenside);
    if (!has(Black, King, 60)) rights &= ~(BlackKingside | BlackQueenside);
    if (!has(White, Rook, 7)) rights &= ~WhiteKingside;
    if (!has(White, Rook, 0)) rights &= ~WhiteQueenside;
    if (!has(Black, Rook, 63)) rights &= ~BlackKingside;
    if (!has(Black, Rook, 56)) rights &= ~BlackQueenside;
    state.castling = rights;
    state.halfmove_clock = static_cast<int>(fields.halfmove_value);
    state.plies_from_null = NoNullMove;
    state.fullmove_number = static_cast<int>(fields.fullmove_value);
    position.compute_state_from_scratch();
    if (fields.en_passant != "-") {
        // Kept only when a double push could have produced it: the square and the one behind it
        // empty, the enemy pawn in front, and the square on the side to move's capture rank.
        const Square square = make_square(fields.en_passant[0] - 'a', fields.en_passant[1] - '1');
        const Color us = position.side_;
        const int forward = us == White ? 8 : -8;
        const bool consistent =
            rank_of(square) == (us == White ? 5 : 2) &&
            !(position.occupied() & (square_bb(square) | square_bb(square + forward))) &&
            (position.pieces(~us, Pawn) & square_bb(square - forward));
        if (consistent) position.set_en_passant_after_double_push(state, square);
    }
    return position;
}

void Position::compute_state_from_scratch() {
    StateInfo& state = mutable_state();
    std::uint64_t key = 0;
    for (Bitboard bits = occupied(); bits;) {
        const Square square = pop_lsb(bits);
        key ^= zobrist::piece(color_on(square), piece_type_on(square), square);
    }
    key ^= zobrist::castling(state.castling);
    if (side_ == White) key ^= zobrist::white_to_move();
    state.key = key;
    state.repetition_key = key;
    state.en_passant_key = 0;
    state.en_passant = NoSquare;
    state.checkers = attackers_to(king_square(side_), occupied()) & pieces(~side_);
}

// `next` is the state of the position (side_ already to move) after a double push that skipped
// `skipped`; sets the Polyglot en-passant key and, when legal, the en-passant square.
void Position::set_en_passant_after_double_push(StateInfo& next, Square skipped) {
    const Color us = side_;
    Bitboard capturers = attacks_from_pawn(~us, skipped) & pieces(us, Pawn);
    if (!capturers) return;
    next.en_passant_key = zobrist::en_passant_file(file_of(skipped));
    next.key ^= next.en_passant_key;
    while (capturers) {
        if (en_passant_is_legal(pop_lsb(capturers), skipped)) {
            next.en_passant = skipped;
            next.repetition_key = next.key;
            return;
        }
    }
}

bool Position::en_passant_is_legal(Square from, Square to) const {
    const Color us = side_;
    const Square captured = to + (us == White ? -8 : 8);
    const Square king = king_square(us);
    const Bitboard occupancy = (occupied() ^ square_bb(from) ^ square_bb(captured)) | square_bb(to);
    const Bitboard them = pieces(~us);
    return !((attacks_from_rook(king, occupancy) & them & (pieces(Rook) | pieces(Queen))) ||
             (attacks_from_bishop(king, occupancy) & them & (pieces(Bishop) | pieces(Queen))) ||
             (attacks_from_knight(king) & them & pieces(Knight)) ||
             (attacks_from_pawn(us, king) & them & pieces(Pawn) & ~square_bb(captured)) ||
             (attacks_from_king(king) & them & pieces(King)));
}

std::string Position::fen() const {
    std::string text;
    for (int rank = 7; rank >= 0; --rank) {
        int empty = 0;
        for (int file = 0; file < 8; ++file) {
            const Square square = make_square(file, rank);
            if (piece_type_on(square) == NoPieceType) {
                ++empty;
                continue;
            }
            if (empty) text += static_cast<char>('0' + empty);
            empty = 0;
            text += PieceLetters[piece_type_on(square) + 8 * color_on(square)];
        }
        if (empty) text += static_cast<char>('0' + empty);
        if (rank) text += '/';
    }
    text += side_ == White ? " w " : " b ";
    const int rights = castling_rights();
    if (!rights) text += '-';
    for (int i = 0; i < 4; ++i)
        if (rights & (1 << i)) text += "KQkq"[i];
    text += ' ';
    const Square ep = en_passant_square();
    if (ep == NoSquare) {
        text += '-';
    } else {
        text += static_cast<char>('a' + file_of(ep));
        text += static_cast<char>('1' + rank_of(ep));
    }
    text += ' ' + std::to_string(halfmove_clock()) + ' ' + std::to_string(fullmove_number());
    return text;
}

void Position::put_piece(Color color, PieceType type, Square square) {
    board_[square] = static_cast<std::uint8_t>(type | (color << 3));
    by_type_[type] |= square_bb(square);
    by_color_[color] |= square_bb(square);
}

void Position::remove_piece(Square square) {
    const Bitboard bit = square_bb(square);
    by_type_[piece_type_on(square)] ^= bit;
    by_color_[color_on(square)] ^= bit;
    board_[square] = 0;
}

void Position::move_piece(Square from, Square to) {
    const Bitboard both = square_bb(from) | square_bb(to);
    by_type_[piece_type_on(from)] ^= both;
    by_color_[color_on(from)] ^= both;
    board_[to] = board_[from];
    board_[from] = 0;
}

Bitboard Position::attackers_to(Square square, Bitboard occupancy) const {
    return (attacks_from_pawn(Black, square) & pieces(White, Pawn)) |
           (attacks_from_pawn(White, square) & pieces(Black, Pawn)) |
           (attacks_from_knight(square) & pieces(Knight)) |
           (attacks_from_bishop(square, occupancy) & (pieces(Bishop) | pieces(Queen))) |
           (attacks_from_rook(square, occupancy) & (pieces(Rook) | pieces(Queen))) |
           (attacks_from_king(square) & pieces(King));
}

bool Position::is_attacked_by(Color attacker, Square square, Bitboard occupancy) const {
    const Bitboard them = pieces(attacker);
    return (attacks_from_pawn(~attacker, square) & them & pieces(Pawn)) ||
           (attacks_from_knight(square) & them & pieces(Knight)) ||
           (attacks_from_king(square) & them & pieces(King)) ||
           (attacks_from_bishop(square, occupancy) & them & (pieces(Bishop) | pieces(Queen))) ||
           (attacks_from_rook(square, occupancy) & them & (pieces(Rook) | pieces(Queen)));
}

Bitboard Position::blockers_for_king(Color color) const {
    const Square king = king_square(color);
    const Bitboard them = pieces(~color);
    Bitboard snipers = ((attacks_from_rook(king, 0) & (pieces(Rook) | pieces(Queen))) |
                        (attacks_from_bishop(king, 0) & (pieces(Bishop) | pieces(Queen)))) &
                       them;
    Bitboard blockers = 0;
    const Bitboard occupancy = occupied();
    while (snipers) {
        const Bitboard between = between_bb(king, pop_lsb(snipers)) & occupancy;
        if (between && !more_than_one(between)) blockers |= between;
    }
    return blockers;
}

bool Position::is_capture(Move move) const {
    const Square to = move.to();
    return (pieces(~side_) & square_bb(to)) ||
           (piece_type_on(move.from()) == Pawn && to == en_passant_square() &&
            file_of(move.from()) != file_of(to));
}

bool Position::is_pseudo_legal(Move move) const {
    const Square from = move.from(), to = move.to();
    const PieceType promotion = move.promotion();
    const Color us = side_;
    if (move.bits() >> 15) return false;  // bit 15 is not part of any move
    if (from == to || !(pieces(us) & square_bb(from)) || (pieces(us) & square_bb(to))) return false;
    if (promotion == Pawn || promotion == King || promotion > King) return false;
    const PieceType type = piece_type_on(from);
    const Bitboard occupancy = occupied();
    const Bitboard target = square_bb(to);
    if (type == Pawn) {
        const bool last_rank = rank_of(to) == (us == White ? 7 : 0);
        if (last_rank != (promotion != NoPieceType)) return false;
        const int forward = us == White ? 8 : -8;
        if (attacks_from_pawn(us, from) & target)
            return (pieces(~us) & target) || to == en_passant_square();
        if (to == from + forward) return !(occupancy & target);
        if (to == from + 2 * forward)
            return rank_of(from) == (us == White ? 1 : 6) &&
                   !(occupancy & (target | square_bb(from + forward)));
        return false;
    }
    if (promotion != NoPieceType) return false;
    switch (type) {
        case Knight: return (attacks_from_knight(from) & target) != 0;
        case Bishop: return (attacks_from_bishop(from, occupancy) & target) != 0;
        case Rook: return (attacks_from_rook(from, occupancy) & target) != 0;
        case Queen: return (attacks_from_queen(from, occupancy) & target) != 0;
        case King: {
            if (attacks_from_king(from) & target) return true;
            if (rank_of(from) != rank_of(to) || (to != from + 2 && to != from - 2)) return false;
            MoveList castles;
            generate_legal_quiets(*this, castles);
            return castles.contains(move);
        }
        default: return false;
    }
}

bool Position::is_legal(Move move) const {
    if (!is_pseudo_legal(move)) return false;
    const Color us = side_;
    const Square from = move.from(), to = move.to();
    const PieceType type = piece_type_on(from);
    if (type == King) {
        if (to == from + 2 || to == from - 2) return true;  // castling: checked by pseudo-legal
        return !is_attacked_by(~us, to, occupied() ^ square_bb(from));
    }
    if (type == Pawn && to == en_passant_square() && file_of(from) != file_of(to))
        return en_passant_is_legal(from, to);
    const Square king = king_square(us);
    const Bitboard checkers_now = checkers();
    if (checkers_now) {
        if (more_than_one(checkers_now)) return false;
        const Square checker = lsb(checkers_now);
        if (!((between_bb(king, checker) | checkers_now) & square_bb(to))) return false;
    }
    return !(blockers_for_king(us) & square_bb(from)) || (line_bb(king, from) & square_bb(to));
}

void Position::do_move(Move move) {
    assert(is_legal(move));
    const StateInfo& previous = state();
    StateInfo next;
    next.castling = previous.castling;
    next.halfmove_clock = previous.halfmove_clock + 1;
    next.fullmove_number = previous.fullmove_number + (side_ == Black ? 1 : 0);
    next.plies_from_null = previous.plies_from_null + 1;
    next.move = move;
    std::uint64_t key = previous.key ^ previous.en_passant_key ^ zobrist::white_to_move();

    const Color us = side_, them = ~us;
    const Square from = move.from(), to = move.to();
    const PieceType type = piece_type_on(from);
    const Square previous_en_passant = previous.en_passant;
    Square skipped = NoSquare;

    if (type == King && (to == from + 2 || to == from - 2)) {
        const Square rook_from = to > from ? from + 3 : from - 4;
        const Square rook_to = to > from ? from + 1 : from - 1;
        move_piece(rook_from, rook_to);
        key ^= zobrist::piece(us, Rook, rook_from) ^ zobrist::piece(us, Rook, rook_to);
    } else if (type == Pawn && to == previous_en_passant && file_of(from) != file_of(to)) {
        const Square captured = to + (us == White ? -8 : 8);
        remove_piece(captured);
        key ^= zobrist::piece(them, Pawn, captured);
        next.captured = Pawn;
    } else if (board_[to]) {
        next.captured = piece_type_on(to);
        key ^= zobrist::piece(them, next.captured, to);
        remove_piece(to);
    }
    move_piece(from, to);
    key ^= zobrist::piece(us, type, from) ^ zobrist::piece(us, type, to);
    if (type == Pawn) {
        next.halfmove_clock = 0;
        if (move.promotion() != NoPieceType) {
            remove_piece(to);
            put_piece(us, move.promotion(), to);
            key ^= zobrist::piece(us, Pawn, to) ^ zobrist::piece(us, move.promotion(), to);
        } else if ((to ^ from) == 16) {
            skipped = (from + to) / 2;
        }
    }
    if (next.captured != NoPieceType) next.halfmove_clock = 0;
    next.castling &= CastlingMasks[from] & CastlingMasks[to];
    key ^= zobrist::castling(previous.castling ^ next.castling);
    next.key = key;
    next.repetition_key = key;
    side_ = them;
    states_.push_back(next);
    StateInfo& current = mutable_state();
    if (skipped != NoSquare) set_en_passant_after_double_push(current, skipped);
    current.checkers = attackers_to(king_square(them), occupied()) & pieces(us);
}

void Position::undo_move() {
    assert(states_.size() > 1);
    const StateInfo& current = state();
    const Move move = current.move;
    const Color them = side_, us = ~side_;
    const Square from = move.from(), to = move.to();
    if (move.promotion() != NoPieceType) {
        remove_piece(to);
        put_piece(us, Pawn, to);
    }
    const PieceType type = piece_type_on(to);
    move_piece(to, from);
    if (type == King && (to == from + 2 || to == from - 2)) {
        const Square rook_from = to > from ? from + 3 : from - 4;
        const Square rook_to = to > from ? from + 1 : from - 1;
        move_piece(rook_to, rook_from);
    } else if (current.captured != NoPieceType) {
        const StateInfo& previous = states_[states_.size() - 2];
        const bool en_passant = type == Pawn && to == previous.en_passant;
        const Square square = en_passant ? to + (us == White ? -8 : 8) : to;
        put_piece(them, current.captured, square);
    }
    side_ = us;
    states_.pop_back();
}

void Position::do_null_move() {
    assert(!in_check());
    const StateInfo& previous = state();
    StateInfo next = previous;
    next.key = previous.key ^ previous.en_passant_key ^ zobrist::white_to_move();
    next.repetition_key = next.key;
    next.en_passant_key = 0;
    next.en_passant = NoSquare;
    next.halfmove_clock = previous.halfmove_clock + 1;
    next.fullmove_number = previous.fullmove_number + (side_ == Black ? 1 : 0);
    next.plies_from_null = 0;
    next.move = Move::none();
    next.captured = NoPieceType;
    side_ = ~side_;
    next.checkers = 0;
    states_.push_back(next);
}

void Position::undo_null_move() {
    assert(states_.size() > 1 && state().move.is_none());
    side_ = ~side_;
    states_.pop_back();
}

bool Position::is_fifty_move_draw() const {
    return halfmove_clock() >= 100 && has_legal_move(*this);
}

bool Position::has_insufficient_material(Color color) const {
    const Bitboard ours = pieces(color);
    if (ours & (pieces(Pawn) | pieces(Rook) | pieces(Queen))) return false;
    if (ours & pieces(Knight))
        return popcount(ours) <= 2 && !(pieces(~color) & ~pieces(King) & ~pieces(Queen));
    if (ours & pieces(Bishop)) {
        const Bitboard bishops = pieces(Bishop);
        const bool same_color = !(bishops & DarkSquares) || !(bishops & LightSquares);
        return same_color && !pieces(Pawn) && !pieces(Knight);
    }
    return true;
}

bool Position::is_insufficient_material() const {
    return has_insufficient_material(White) && has_insufficient_material(Black);
}

int Position::repetition_count() const {
    const StateInfo& current = state();
    const int window = std::min(current.halfmove_clock, current.plies_from_null);
    const int on_stack = static_cast<int>(states_.size()) - 1;
    int count = 0;
    for (int back = 2; back <= window; back += 2) {
        const int index = on_stack - back;
        std::uint64_t key;
        if (index >= 0) {
            key = states_[index].repetition_key;
        } else {
            const int history_index = static_cast<int>(history_keys_.size()) + index;
            if (history_index < 0) break;
            key = history_keys_[history_index];
        }
        if (key == current.repetition_key) ++count;
    }
    return count;
}

bool Position::is_repetition(int times) const { return repetition_count() >= times; }

Move Position::parse_uci(std::string_view text) const {
    const auto fail = [&]() {
        throw MoveError("illegal or unparseable move " + python_repr(text) + " in " +
                        python_repr(fen()));
    };
    if (text.size() != 4 && text.size() != 5) fail();
    if (text[0] < 'a' || text[0] > 'h' || text[1] < '1' || text[1] > '8' || text[2] < 'a' ||
        text[2] > 'h' || text[3] < '1' || text[3] > '8')
        fail();
    PieceType promotion = NoPieceType;
    if (text.size() == 5) {
        const std::size_t index = std::string_view(" pnbrqk").find(text[4]);
        if (index == std::string_view::npos || index == 0) fail();
        promotion = PieceType(index);
    }
    const Move move(make_square(text[0] - 'a', text[1] - '1'),
                    make_square(text[2] - 'a', text[3] - '1'), promotion);
    if (!is_legal(move)) fail();
    return move;
}

}  // namespace latentchess::core
