// Move ordering (see movepick.h for the contract).
//
// Invariants:
// - Scores are computed once per node; next() is a selection sort step (nodes are usually cut
//   after a few moves, so sorting everything would waste work).
#include "movepick.h"

#include <algorithm>

#include "see.h"

namespace latentchess::core {

int static_order(const QuietContext& context, PieceType moved, Move move) {
  int score = 0;
  if (context.threat_order > 0) {
    // Attacked by a cheaper piece: the squares that threaten the moved piece, and its weight.
    Bitboard danger = 0;
    int weight = 0;
    if (moved == Queen) {
      danger = context.attacked_by_rooks;
      weight = 3;
    } else if (moved == Rook) {
      danger = context.attacked_by_minors;
      weight = 2;
    } else if (moved == Knight || moved == Bishop) {
      danger = context.attacked_by_pawns;
      weight = 1;
    }
    const bool from_attacked = (danger & square_bb(move.from())) != 0;
    const bool to_attacked = (danger & square_bb(move.to())) != 0;
    if (from_attacked != to_attacked) {
      score += (from_attacked ? 1 : -1) * weight * context.threat_order;
    }
  }
  if (context.check_order > 0 && (context.checking_squares[moved] & square_bb(move.to()))) {
    score += context.check_order;
  }
  return score;
}

bool is_tactical(const Position& position, Move move) {
  return move.promotion() != NoPieceType || position.is_capture(move);
}

PieceType captured_type(const Position& position, Move move) {
  const PieceType victim = position.piece_type_on(move.to());
  if (victim != NoPieceType || move.promotion() != NoPieceType) return victim;
  return Pawn;  // a capture onto an empty square: en passant
}

AttackLayers attack_layers(const Position& position, Color color) {
  const Bitboard occupied = position.occupied();
  AttackLayers layers;
  layers.pawns = pawn_attacks_bb(color, position.pieces(color, Pawn));
  layers.minors = layers.pawns;
  for (Bitboard knights = position.pieces(color, Knight); knights;) {
    layers.minors |= attacks_from_knight(pop_lsb(knights));
  }
  for (Bitboard bishops = position.pieces(color, Bishop); bishops;) {
    layers.minors |= attacks_from_bishop(pop_lsb(bishops), occupied);
  }
  layers.rooks = layers.minors;
  for (Bitboard rooks = position.pieces(color, Rook); rooks;) {
    layers.rooks |= attacks_from_rook(pop_lsb(rooks), occupied);
  }
  layers.all = layers.rooks | attacks_from_king(position.king_square(color));
  for (Bitboard queens = position.pieces(color, Queen); queens;) {
    layers.all |= attacks_from_queen(pop_lsb(queens), occupied);
  }
  return layers;
}

Bitboard attacked_squares(const Position& position, Color color) {
  return attack_layers(position, color).all;
}

MovePicker::MovePicker(const Position& position, Kind kind, Move table_move,
                       const Move killers[2], const HistoryTable& history,
                       const std::vector<Move>* external_order,
                       const QuietContext* quiet_context) {
  if (kind == Kind::All) {
    generate_legal_moves(position, moves_);
  } else {
    MoveList captures;
    generate_legal_captures(position, captures);
    for (Move move : captures) {
      const PieceType promotion = move.promotion();
      if (promotion == NoPieceType || promotion == Queen) moves_.moves[moves_.size++] = move;
    }
  }
  const Color us = position.side_to_move();
  for (int i = 0; i < moves_.size; ++i) {
    const Move move = moves_.moves[i];
    int score = 0;
    if (move == table_move) {
      score = kTableMoveScore;
    } else if (is_tactical(position, move)) {
      const PieceType victim = captured_type(position, move);
      const PieceType attacker = position.piece_type_on(move.from());
      int order = 64 * kSeeValue[victim] / 100 + 8 * kSeeValue[move.promotion()] / 100 -
                  static_cast<int>(attacker);
      if (quiet_context != nullptr && quiet_context->captures != nullptr &&
          quiet_context->capture_divisor > 0) {
        order += quiet_context->captures->get(history_slot(us, attacker, move.to()), victim) /
                 quiet_context->capture_divisor;
      }
      score = (see_at_least(position, move, 0) ? kGoodCaptureScore : kBadCaptureScore) + order;
    } else if (killers != nullptr && move == killers[0]) {
      score = kKillerScore + 1;
    } else if (killers != nullptr && move == killers[1]) {
      score = kKillerScore;
    } else if (quiet_context != nullptr && move == quiet_context->counter_move) {
      score = kCounterMoveScore;
    } else {
      score = history.get(us, move, quiet_context != nullptr ? quiet_context->threats : 0);
      if (quiet_context != nullptr) {
        const PieceType moved = position.piece_type_on(move.from());
        const int slot = history_slot(us, moved, move.to());
        for (const std::int16_t* row : quiet_context->continuation) {
          if (row != nullptr) score += row[slot];
        }
        score += static_order(*quiet_context, moved, move);
      }
      if (external_order != nullptr) {
        const int limit = std::min<int>(static_cast<int>(external_order->size()), 255);
        for (int rank = 0; rank < limit; ++rank) {
          if ((*external_order)[rank] == move) {
            score = kExternalScore - rank;
            break;
          }
        }
      }
    }
    scores_[i] = score;
  }
}

Move MovePicker::next(int* score) {
  if (index_ >= moves_.size) return Move::none();
  int best = index_;
  for (int i = index_ + 1; i < moves_.size; ++i) {
    if (scores_[i] > scores_[best]) best = i;
  }
  std::swap(moves_.moves[index_], moves_.moves[best]);
  std::swap(scores_[index_], scores_[best]);
  if (score != nullptr) *score = scores_[index_];
  return moves_.moves[index_++];
}

}  // namespace latentchess::core
