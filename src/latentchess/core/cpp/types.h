// Basic chess types shared by every file of the native core.
//
// Invariants:
//  * Numbering follows python-chess so that conversion at the Python boundary is trivial:
//    squares a1 = 0, b1 = 1, ..., h8 = 63; piece types Pawn = 1 ... King = 6 (0 = none).
//  * Colours are White = 0, Black = 1 (python-chess uses WHITE = True; the binding converts).
//  * A Move is 16 bits: from (bits 0-5) | to (bits 6-11) | promotion piece type (bits 12-14).
//    Castling is the king's two-square move (e1g1, e1c1), as in UCI and python-chess.
//    Move::none() is 0 and is never a legal move (from == to).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace latentchess::core {

using Bitboard = std::uint64_t;
using Square = int;

constexpr Square NoSquare = -1;

enum Color : int { White = 0, Black = 1 };

constexpr Color operator~(Color color) { return Color(color ^ 1); }

enum PieceType : int {
    NoPieceType = 0,
    Pawn = 1,
    Knight = 2,
    Bishop = 3,
    Rook = 4,
    Queen = 5,
    King = 6,
};

// Castling rights as a 4-bit set, in FEN letter order K, Q, k, q.
enum CastlingRight : int {
    WhiteKingside = 1,
    WhiteQueenside = 2,
    BlackKingside = 4,
    BlackQueenside = 8,
    AllCastling = 15,
};

constexpr int file_of(Square square) { return square & 7; }
constexpr int rank_of(Square square) { return square >> 3; }
constexpr Square make_square(int file, int rank) { return rank * 8 + file; }

// A piece on the board: colour and type. An empty square has type NoPieceType.
struct Piece {
    Color color = White;
    PieceType type = NoPieceType;
};

class Move {
  public:
    constexpr Move() = default;
    constexpr Move(Square from, Square to, PieceType promotion = NoPieceType)
        : bits_(static_cast<std::uint16_t>(from | (to << 6) | (promotion << 12))) {}
    static constexpr Move none() { return Move(); }
    static constexpr Move from_bits(std::uint16_t bits) {
        Move move;
        move.bits_ = bits;
        return move;
    }

    constexpr Square from() const { return bits_ & 63; }
    constexpr Square to() const { return (bits_ >> 6) & 63; }
    constexpr PieceType promotion() const { return PieceType((bits_ >> 12) & 7); }
    constexpr std::uint16_t bits() const { return bits_; }
    constexpr bool is_none() const { return bits_ == 0; }
    constexpr bool operator==(Move other) const { return bits_ == other.bits_; }
    constexpr bool operator!=(Move other) const { return bits_ != other.bits_; }

    // "e2e4", "e7e8q"; "0000" for Move::none().
    std::string to_uci() const;

  private:
    std::uint16_t bits_ = 0;
};

struct MoveList {
    std::array<Move, 256> moves;
    int size = 0;

    void push(Move move) { moves[size++] = move; }
    Move* begin() { return moves.data(); }
    Move* end() { return moves.data() + size; }
    const Move* begin() const { return moves.data(); }
    const Move* end() const { return moves.data() + size; }
    Move operator[](int index) const { return moves[index]; }
    bool contains(Move move) const {
        for (int i = 0; i < size; ++i)
            if (moves[i] == move) return true;
        return false;
    }
};

}  // namespace latentchess::core
