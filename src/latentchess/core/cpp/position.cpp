// Position: FEN in/out, make/unmake, attacks and draw rules (see position.h for invariants).
#include "position.h"

#include <cassert>

#include "fen.h"
#include "movegen.h"
#include "zobrist.h"

namespace latentchess::core {

namespace {

constexpr std::string_view PieceLetters = " PNBRQK  pnbrqk";

}  // namespace

Position Position::start() {
    return from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
}

Position Position::from_fen(std::string_view fen, bool chess960) {
    const FenFields fields = split_fen(fen, chess960);
    Position position;
    position.chess960_ = chess960;
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
    position.set_castling(fields.castling);
    int rights = 0;
    for (int index = 0; index < 4; ++index)
        if (position.castling_rook_[index] != NoSquare) rights |= 1 << index;
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

// The castling rights of the FEN field `field`, resolved to rook squares and cleaned as
// python-chess does (set_castling_fen, then clean_castling_rights in the board's mode), and the
// tables that castling moves and their rights use.
void Position::set_castling(std::string_view field) {
    Bitboard rooks_named = 0;  // python-chess's castling_rights bitboard
    for (const char c : field) {
        if (c == '-') continue;
        const Color color = (c >= 'A' && c <= 'Z') ? White : Black;
        const char letter = static_cast<char>(color == White ? c - 'A' + 'a' : c);
        const int rank = color == White ? 0 : 7;
        const Bitboard backrank = rank_bb(rank);
        const Bitboard rooks = pieces(color, Rook) & backrank;
        const Square king = king_square(color);
        if (letter == 'q') {  // the leftmost rook, when left of the king
            if (rooks) rooks_named |= square_bb(lsb(rooks) < king ? lsb(rooks) : make_square(0, rank));
        } else if (letter == 'k') {  // the rightmost rook, when right of the king
            rooks_named |= (rooks && msb(rooks) > king) ? square_bb(msb(rooks)) : square_bb(make_square(7, rank));
        } else {
            rooks_named |= square_bb(make_square(letter - 'a', rank));
        }
    }
    for (int index = 0; index < 4; ++index) castling_rook_[index] = NoSquare;
    for (const Color color : {White, Black}) {
        const int rank = color == White ? 0 : 7;
        const Square king = king_square(color);
        Bitboard candidates = rooks_named & pieces(color, Rook) & rank_bb(rank);
        if (rank_of(king) != rank) candidates = 0;
        if (!chess960_) {  // rooks in the corners, the king on e1/e8
            candidates &= square_bb(make_square(0, rank)) | square_bb(make_square(7, rank));
            if (file_of(king) != 4) candidates = 0;
        }
        if (!candidates) continue;
        const Square a_side = lsb(candidates), h_side = msb(candidates);
        const int base = color == White ? 0 : 2;
        if (h_side > king) castling_rook_[base] = h_side;
        if (a_side < king) castling_rook_[base + 1] = a_side;
    }
    castling_masks_.fill(AllCastling);
    for (int index = 0; index < 4; ++index) {
        const Square rook = castling_rook_[index];
        if (rook == NoSquare) continue;
        const Color color = index < 2 ? White : Black;
        const Square king = king_square(color);
        const int rank = rank_of(king);
        const bool kingside = index % 2 == 0;
        const Square king_to = make_square(kingside ? 6 : 2, rank);
        const Square rook_to = make_square(kingside ? 5 : 3, rank);
        const Bitboard both = square_bb(king) | square_bb(rook);
        castling_empty_[index] = (between_bb(king, king_to) | square_bb(king_to) |
                                  between_bb(rook, rook_to) | square_bb(rook_to)) & ~both;
        castling_king_path_[index] = between_bb(king, king_to);
        castling_king_[index] = king;
        castling_king_to_[index] = king_to;
        castling_rook_to_[index] = rook_to;
        castling_moves_[index] = chess960_ ? Move(king, rook) : Move(king, king_to);
        castling_masks_[rook] &= static_cast<std::uint8_t>(~(1 << index));
        castling_masks_[king] &= static_cast<std::uint8_t>(~(3 << (index & 2)));
    }
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

std::string Position::fen(bool shredder) const {
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
    for (int i = 0; i < 4; ++i) {
        if (!(rights & (1 << i))) continue;
        // X-FEN names the outermost rook of a side by K or Q, any other by its file (as
        // python-chess's castling_xfen); Shredder-FEN always by its file.
        const Color color = i < 2 ? White : Black;
        const Square rook = castling_rook_[i];
        const bool a_side = i % 2 == 1;
        const Bitboard others = pieces(color, Rook) & rank_bb(rank_of(rook)) & ~square_bb(rook);
        const Bitboard outside = a_side ? others & (square_bb(rook) - 1) : others & ~(square_bb(rook) - 1);
        char letter = static_cast<char>('a' + file_of(rook));
        if (!shredder && !outside) letter = a_side ? 'q' : 'k';
        text += color == White ? static_cast<char>(letter - 'a' + 'A') : letter;
    }
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
    if (from == to || !(pieces(us) & square_bb(from))) return false;
    if (pieces(us) & square_bb(to)) {  // only Chess960 castling: king takes own rook
        if (!chess960_ || promotion != NoPieceType || piece_type_on(from) != King ||
            piece_type_on(to) != Rook)
            return false;
        MoveList castles;
        generate_legal_quiets(*this, castles);
        return castles.contains(move);
    }
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
        if (is_castling(move)) return true;  // checked in full by is_pseudo_legal
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

    Square landing = to;  // where the moving piece lands (a Chess960 castling king: not `to`)
    if (type == King && is_castling(move)) {
        const CastlingSquares castle = castling_squares(move);
        next.castled = true;
        landing = castle.king_to;
        if (chess960_) {  // king and rook may land on each other's squares: lift both first
            remove_piece(from);
            remove_piece(castle.rook_from);
            put_piece(us, King, castle.king_to);
            put_piece(us, Rook, castle.rook_to);
        } else {
            move_piece(castle.rook_from, castle.rook_to);
        }
        key ^= zobrist::piece(us, Rook, castle.rook_from) ^ zobrist::piece(us, Rook, castle.rook_to);
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
    if (!(next.castled && chess960_)) move_piece(from, to);
    key ^= zobrist::piece(us, type, from) ^ zobrist::piece(us, type, landing);
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
    next.castling &= castling_masks_[from] & castling_masks_[to];
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
    if (current.castled) {
        const CastlingSquares castle = castling_squares(move);
        if (chess960_) {
            remove_piece(castle.king_to);
            remove_piece(castle.rook_to);
            put_piece(us, King, castle.king_from);
            put_piece(us, Rook, castle.rook_from);
        } else {
            move_piece(to, from);
            move_piece(castle.rook_to, castle.rook_from);
        }
        side_ = us;
        states_.pop_back();
        return;
    }
    if (move.promotion() != NoPieceType) {
        remove_piece(to);
        put_piece(us, Pawn, to);
    }
    const PieceType type = piece_type_on(to);
    move_piece(to, from);
    if (current.captured != NoPieceType) {
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
