// Static exchange evaluation by the swap algorithm (see see.h for the contract).
//
// Invariants:
// - `balance` is always the score of the exchange so far, minus `threshold`, from the point of
//   view of the side that would have to move next in the loop; the loop ends when that side has
//   no attacker left or can stop with a result it accepts.
#include "see.h"

#include "bitboard.h"

namespace latentchess::core {

bool see_at_least(const Position& position, Move move, int threshold) {
  const Square from = move.from(), to = move.to();
  const Color us = position.side_to_move();
  const PieceType moved = position.piece_type_on(from);
  if (moved == King && position.is_castling(move)) return threshold <= 0;

  Bitboard occupied = position.occupied();
  PieceType victim = position.piece_type_on(to);
  if (moved == Pawn && to == position.en_passant_square()) {
    victim = Pawn;
    occupied ^= square_bb(us == White ? to - 8 : to + 8);
  }
  const PieceType promotion = move.promotion();
  int balance = kSeeValue[victim] - threshold;
  if (promotion != NoPieceType) balance += kSeeValue[promotion] - kSeeValue[Pawn];
  if (balance < 0) return false;

  // The piece now standing on `to` may be taken: our gain if it is not recaptured is `balance`.
  const PieceType standing = promotion != NoPieceType ? promotion : moved;
  balance = kSeeValue[standing] - balance;
  if (balance <= 0) return true;

  occupied ^= square_bb(from) | square_bb(to);
  Bitboard attackers = position.attackers_to(to, occupied) & occupied;
  const Bitboard diagonal = position.pieces(White, Bishop) | position.pieces(Black, Bishop) |
                            position.pieces(White, Queen) | position.pieces(Black, Queen);
  const Bitboard straight = position.pieces(White, Rook) | position.pieces(Black, Rook) |
                            position.pieces(White, Queen) | position.pieces(Black, Queen);
  Color side = us;
  bool we_win = true;  // result if the side to move in the loop cannot (or will not) recapture
  while (true) {
    side = side == White ? Black : White;
    attackers &= occupied;
    const Bitboard side_attackers = attackers & position.pieces(side);
    if (!side_attackers) break;
    we_win = !we_win;

    PieceType attacker = Pawn;
    Bitboard candidates = 0;
    for (int type = Pawn; type <= King; ++type) {
      candidates = side_attackers & position.pieces(side, static_cast<PieceType>(type));
      if (candidates) {
        attacker = static_cast<PieceType>(type);
        break;
      }
    }
    if (attacker == King) {
      // The king may only recapture if the other side has nothing left to take it with.
      const Color other = side == White ? Black : White;
      return (attackers & position.pieces(other)) ? !we_win : we_win;
    }
    balance = kSeeValue[attacker] - balance;
    // `balance` is now from the point of view of the side that just recaptured's opponent.
    if (balance < static_cast<int>(we_win)) break;
    occupied ^= square_bb(lsb(candidates));
    if (attacker == Pawn || attacker == Bishop || attacker == Queen) {
      attackers |= attacks_from_bishop(to, occupied) & diagonal;
    }
    if (attacker == Rook || attacker == Queen) {
      attackers |= attacks_from_rook(to, occupied) & straight;
    }
  }
  return we_win;
}

}  // namespace latentchess::core
