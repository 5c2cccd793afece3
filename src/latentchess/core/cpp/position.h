// The chess position: piece placement, side to move, castling, en passant, clocks, and a stack
// of states so that moves can be undone exactly.
//
// Invariants:
//  * by_type_[t] & by_color_[c] are the pieces of colour c and type t; board_ agrees with them;
//    each side has exactly one king (from_fen refuses anything else).
//  * Castling rights are always "clean" (as python-chess's clean_castling_rights): in standard
//    chess a right is kept only while the king stands on e1/e8 and the rook on its corner; in
//    Chess960 (chess960()) while the king stands on its back rank and the right's rook on its
//    start square (castling_rook_square), the kingside (K) rook to the king's right, the
//    queenside (Q) one to its left. The rook squares come from the FEN's castling field.
//  * A castling move is encoded as python-chess encodes it on a board of the same mode: the
//    king's two-square move (e1g1) in standard chess, king takes own rook (e1h1, b1a1) in
//    Chess960, where the king may already stand on its target square (g1 or c1) and the rook on
//    the king's target. is_castling(m) tells which moves castle; castling_squares(m) gives the
//    king's and the rook's from and to squares in both modes.
//  * state().en_passant is set only when an en-passant capture is legal (so fen() and the tokens
//    show it exactly as python-chess's board.fen() does), while state().key follows Polyglot: it
//    includes the en-passant file whenever a pawn of the side to move stands next to the
//    double-pushed pawn, legal or not. state().repetition_key differs from key only there, and
//    positions are compared for repetition by it (as python-chess's transposition key).
//  * do_move(m) requires m to be legal; undo_move() restores every field bit for bit.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bitboard.h"
#include "types.h"
#include "zobrist.h"

namespace latentchess::core {

// A FEN the board refuses. `problem` is phrased as the Python tokenizer phrases it.
class FenError : public std::runtime_error {
  public:
    FenError(std::string fen, std::string problem)
        : std::runtime_error("invalid FEN '" + fen + "': " + problem),
          fen(std::move(fen)),
          problem(std::move(problem)) {}
    std::string fen;
    std::string problem;
};

// A move that is not legal (or not parseable) in the position it was given to.
class MoveError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// plies_from_null when no null move was made: large, and far from overflowing.
constexpr int NoNullMove = 1 << 30;

struct StateInfo {
    std::uint64_t key = 0;             // Polyglot key
    std::uint64_t repetition_key = 0;  // key without a non-capturable en-passant file
    std::uint64_t en_passant_key = 0;  // the en-passant part of key (0 or one file key)
    Bitboard checkers = 0;             // enemy pieces giving check to the side to move
    int castling = 0;                  // CastlingRight bits
    Square en_passant = NoSquare;      // only when a legal en-passant capture exists
    int halfmove_clock = 0;
    int fullmove_number = 1;
    int plies_from_null = NoNullMove;  // plies since the last null move on the stack
    Move move;                         // the move that led here (none at the root / null move)
    PieceType captured = NoPieceType;  // what that move captured
    bool castled = false;              // that move castled
};

// The squares a castling move touches.
struct CastlingSquares {
    Square king_from, king_to, rook_from, rook_to;
};

class Position {
  public:
    // `chess960`: the castling field may be X-FEN (KQkq naming the outermost rook, a file letter
    // when another rook stands further out) or Shredder-FEN (HAha), as python-chess reads it with
    // chess960=True, and castling moves are king-takes-rook. Otherwise KQkq only, rooks on the
    // corners and the king on e1/e8 (the tokenizer's rules).
    static Position from_fen(std::string_view fen, bool chess960 = false);
    static Position start();
    // X-FEN (as python-chess's board.fen(): KQkq unless a file letter is needed), or with
    // `shredder` the rooks' file letters (board.fen(shredder=True)).
    std::string fen(bool shredder = false) const;
    bool chess960() const { return chess960_; }

    Color side_to_move() const { return side_; }
    Bitboard pieces(Color color, PieceType type) const { return by_type_[type] & by_color_[color]; }
    Bitboard pieces(Color color) const { return by_color_[color]; }
    Bitboard pieces(PieceType type) const { return by_type_[type]; }
    Bitboard occupied() const { return by_color_[White] | by_color_[Black]; }
    PieceType piece_type_on(Square square) const { return PieceType(board_[square] & 7); }
    Color color_on(Square square) const { return Color(board_[square] >> 3); }
    Piece piece_on(Square square) const { return {color_on(square), piece_type_on(square)}; }
    Square king_square(Color color) const { return lsb(pieces(color, King)); }
    int castling_rights() const { return state().castling; }
    // The start square of the rook of castling right `index` (0 K, 1 Q, 2 k, 3 q), NoSquare when
    // the position never had that right.
    Square castling_rook_square(int index) const { return castling_rook_[index]; }
    // Whether the king of `color` may castle with right `index` (0 K, 1 Q, 2 k, 3 q) now, as if
    // `color` were to move: the right held, the squares between king and target and rook and
    // target empty but for king and rook, no square the king crosses or lands on attacked (the
    // target judged with the rook moved, as python-chess). Requires: that king not in check.
    bool can_castle(Color color, int index) const;
    // Whether `move` (of the side to move, before it is made) castles.
    bool is_castling(Move move) const {
        if (piece_type_on(move.from()) != King) return false;
        const Square from = move.from(), to = move.to();
        if (chess960_) return (pieces(side_, Rook) & square_bb(to)) != 0;
        return to - from == 2 || from - to == 2;
    }
    // The squares of a castling move (is_castling(move), before or after it is made).
    CastlingSquares castling_squares(Move move) const {
        const Square from = move.from(), to = move.to();
        const Square rook_from = chess960_ ? to : (to > from ? from + 3 : from - 4);
        const bool kingside = rook_from > from;
        const int rank = rank_of(from);
        return {from, make_square(kingside ? 6 : 2, rank), rook_from,
                make_square(kingside ? 5 : 3, rank)};
    }
    // The castling move of right `index` (held) in this position's encoding.
    Move castling_move(int index) const { return castling_moves_[index]; }
    Square en_passant_square() const { return state().en_passant; }
    int halfmove_clock() const { return state().halfmove_clock; }
    int fullmove_number() const { return state().fullmove_number; }
    std::uint64_t key() const { return state().key; }
    // key() after `move` as if it were a plain move or capture (castling rights, en passant,
    // promotion and the castling rook left out): exact for most moves, for prefetching only.
    std::uint64_t key_after(Move move) const {
        const Color us = side_;
        const PieceType type = piece_type_on(move.from());
        std::uint64_t key = state().key ^ state().en_passant_key ^ zobrist::white_to_move() ^
                            zobrist::piece(us, type, move.from()) ^ zobrist::piece(us, type, move.to());
        if (board_[move.to()] && color_on(move.to()) != us) {
            key ^= zobrist::piece(~us, piece_type_on(move.to()), move.to());
        }
        return key;
    }
    const StateInfo& state() const { return states_.back(); }

    bool in_check() const { return state().checkers != 0; }
    Bitboard checkers() const { return state().checkers; }
    // Pieces of both colours attacking `square` given the occupancy `occupied`.
    Bitboard attackers_to(Square square, Bitboard occupied) const;
    // True when `color`'s opponent attacks `square` given the occupancy `occupied`.
    bool is_attacked_by(Color attacker, Square square, Bitboard occupied) const;
    // Pieces of either colour that alone stand between `color`'s king and an enemy slider.
    Bitboard blockers_for_king(Color color) const;

    bool is_capture(Move move) const;
    bool is_pseudo_legal(Move move) const;  // safe on any 16-bit value
    bool is_legal(Move move) const;         // safe on any 16-bit value
    // Whether the side to move may capture en passant with the pawn on `from` (a full check).
    bool en_passant_is_legal(Square from, Square to) const;

    void do_move(Move move);
    void undo_move();
    void do_null_move();
    void undo_null_move();
    int ply_count() const { return static_cast<int>(states_.size()) - 1; }

    // Draw rules, as python-chess. is_repetition(times) is true when the current position
    // occurred `times` times before (same side to move, within the reversible window, looking
    // back into the history keys given with set_history_keys).
    bool is_fifty_move_draw() const;
    bool is_insufficient_material() const;
    bool has_insufficient_material(Color color) const;
    bool is_repetition(int times = 2) const;
    int repetition_count() const;  // earlier occurrences of the current position
    // Keys of the positions before the root, oldest first (the last one is the root's parent).
    void set_history_keys(std::vector<std::uint64_t> keys) { history_keys_ = std::move(keys); }

    Move parse_uci(std::string_view text) const;  // a legal move or MoveError

  private:
    Position() = default;
    void put_piece(Color color, PieceType type, Square square);
    void remove_piece(Square square);
    void move_piece(Square from, Square to);
    StateInfo& mutable_state() { return states_.back(); }
    void set_en_passant_after_double_push(StateInfo& next, Square skipped);
    void compute_state_from_scratch();
    void set_castling(std::string_view field);

    Bitboard by_type_[7] = {};
    Bitboard by_color_[2] = {};
    std::array<std::uint8_t, 64> board_ = {};  // 0 empty, else type | (color << 3)
    Color side_ = White;
    std::vector<StateInfo> states_;
    std::vector<std::uint64_t> history_keys_;
    bool chess960_ = false;
    Square castling_rook_[4] = {NoSquare, NoSquare, NoSquare, NoSquare};
    Bitboard castling_empty_[4] = {};      // must be empty (king and rook themselves excepted)
    Bitboard castling_king_path_[4] = {};  // strictly between the king and its target
    Square castling_king_[4] = {};         // the king's square (fixed while the right lasts)
    Square castling_king_to_[4] = {};      // the king's target (g or c file)
    Square castling_rook_to_[4] = {};      // the rook's target (f or d file)
    Move castling_moves_[4] = {};          // the castling move in this position's encoding
    std::array<std::uint8_t, 64> castling_masks_ = {};  // rights kept after a move touches a square
};

inline bool Position::can_castle(Color color, int index) const {
    if (!(state().castling & (1 << index))) return false;
    const Bitboard occupancy = occupied();
    if (occupancy & castling_empty_[index]) return false;
    const Bitboard without_king = occupancy ^ square_bb(castling_king_[index]);
    for (Bitboard path = castling_king_path_[index]; path;)
        if (is_attacked_by(~color, pop_lsb(path), without_king)) return false;
    const Bitboard rook_moved =
        (without_king ^ square_bb(castling_rook_[index])) | square_bb(castling_rook_to_[index]);
    return !is_attacked_by(~color, castling_king_to_[index], rook_moved);
}

}  // namespace latentchess::core
