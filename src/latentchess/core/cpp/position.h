// The chess position: piece placement, side to move, castling, en passant, clocks, and a stack
// of states so that moves can be undone exactly.
//
// Invariants:
//  * by_type_[t] & by_color_[c] are the pieces of colour c and type t; board_ agrees with them;
//    each side has exactly one king (from_fen refuses anything else).
//  * Castling rights are always "clean" (as python-chess's clean_castling_rights): a right is
//    kept only while the king stands on e1/e8 and the rook on its corner.
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
};

class Position {
  public:
    static Position from_fen(std::string_view fen);
    static Position start();
    std::string fen() const;

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
    Square en_passant_square() const { return state().en_passant; }
    int halfmove_clock() const { return state().halfmove_clock; }
    int fullmove_number() const { return state().fullmove_number; }
    std::uint64_t key() const { return state().key; }
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

    Bitboard by_type_[7] = {};
    Bitboard by_color_[2] = {};
    std::array<std::uint8_t, 64> board_ = {};  // 0 empty, else type | (color << 3)
    Color side_ = White;
    std::vector<StateInfo> states_;
    std::vector<std::uint64_t> history_keys_;
};

}  // namespace latentchess::core
