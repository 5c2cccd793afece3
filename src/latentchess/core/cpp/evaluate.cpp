// The hand-crafted evaluation: tapered material and PeSTO piece-square tables (psqt.h, kept
// incrementally),
// pawn structure (cached per pawn configuration), mobility, king safety, bishop pair and rooks on
// open files. Every number is in centipawns; tables are from White's side (Black mirrors ranks).
//
// Invariants:
// - The piece-square tables are `constexpr` data (psqt.h); nothing here is mutable outside an
//   evaluator object.
// - `stack_.back()` always equals `accumulate(position)` for the position being searched.
#include "evaluate.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <stdexcept>

#include "bitboard.h"
#include "psqt.h"
#include "latent_encoder.h"
#include "nnue_file.h"

namespace latentchess::core {
namespace {

// -- material and piece-square tables -----------------------------------------------------------

constexpr int kPhaseWeight[7] = {0, 0, 1, 1, 2, 4, 0};
constexpr int kFullPhase = 24;
using psqt::kMaterialMiddlegame;

// Score of a piece of `color` and `type` on `square`, material included, White's view (Black's
// scores negated). See psqt.h for the tables' layout.
TaperedScore piece_square(Color color, PieceType type, Square square) {
  const int index = color == White ? square ^ 56 : square;
  const int middlegame = psqt::kMaterialMiddlegame[type] + psqt::kMiddlegame[type - 1][index];
  const int endgame = psqt::kMaterialEndgame[type] + psqt::kEndgame[type - 1][index];
  return color == White ? TaperedScore{middlegame, endgame} : TaperedScore{-middlegame, -endgame};
}

// -- masks ----------------------------------------------------------------------------------------

Bitboard adjacent_files(int file) {
  return (file > 0 ? file_bb(file - 1) : 0) | (file < 7 ? file_bb(file + 1) : 0);
}

// Squares strictly in front of `square` from `color`'s side, on its file and the two beside.
Bitboard passed_span(Color color, Square square) {
  const int file = square % 8, rank = square / 8;
  const Bitboard files = file_bb(file) | adjacent_files(file);
  Bitboard ranks = 0;
  if (color == White) {
    ranks = rank >= 7 ? 0 : ~0ULL << (8 * (rank + 1));
  } else {
    ranks = rank <= 0 ? 0 : ~0ULL >> (8 * (8 - rank));
  }
  return files & ranks;
}

// -- weights --------------------------------------------------------------------------------------

constexpr TaperedScore kDoubledPawn{-8, -18};
constexpr TaperedScore kIsolatedPawn{-10, -12};
constexpr TaperedScore kConnectedPawn{6, 6};
constexpr int kPassedMiddlegame[8] = {0, 4, 8, 12, 24, 45, 70, 0};
constexpr int kPassedEndgame[8] = {0, 8, 12, 22, 40, 70, 115, 0};
constexpr TaperedScore kBishopPair{28, 48};
constexpr TaperedScore kRookOpenFile{24, 8};
constexpr TaperedScore kRookSemiOpenFile{11, 6};
constexpr TaperedScore kShieldPawnMissing{-14, 0};
constexpr int kTempo = 10;
// Mobility: (safe squares - typical count) * weight.
constexpr int kMobilityCentre[7] = {0, 0, 4, 6, 7, 13, 0};
constexpr TaperedScore kMobilityWeight[7] = {{0, 0}, {0, 0}, {4, 4}, {5, 5}, {2, 4}, {1, 2}, {0, 0}};
// King safety: attack units per attacked king-zone square, by attacker.
constexpr int kAttackUnits[7] = {0, 0, 2, 2, 3, 5, 0};
constexpr int kMaxKingDanger = 500;

constexpr std::size_t kPawnTableSize = 1 << 14;

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

HandCraftedEvaluator::HandCraftedEvaluator(HandCraftedTerms terms)
    : terms_(terms), pawn_table_(kPawnTableSize) {
  stack_.reserve(512);
}

std::unique_ptr<Evaluator> HandCraftedEvaluator::clone() const {
  return std::make_unique<HandCraftedEvaluator>(terms_);
}

HandCraftedEvaluator::Accumulator HandCraftedEvaluator::accumulate(const Position& position) {
  Accumulator accumulator;
  for (Color color : {White, Black}) {
    for (int type = Pawn; type <= King; ++type) {
      Bitboard pieces = position.pieces(color, static_cast<PieceType>(type));
      while (pieces) {
        const Square square = pop_lsb(pieces);
        accumulator.score += piece_square(color, static_cast<PieceType>(type), square);
        accumulator.phase += kPhaseWeight[type];
      }
    }
  }
  return accumulator;
}

void HandCraftedEvaluator::reset(const Position& position) {
  stack_.clear();
  stack_.push_back(accumulate(position));
}

void HandCraftedEvaluator::on_do_move(const Position& before, Move move) {
  Accumulator next = stack_.back();
  const Square from = move.from(), to = move.to();
  const Color us = before.side_to_move(), them = us == White ? Black : White;
  const PieceType moved = before.piece_type_on(from);
  if (moved == King && before.is_castling(move)) {  // both modes; Chess960 squares may overlap
    const CastlingSquares castle = before.castling_squares(move);
    next.score -= piece_square(us, King, from);
    next.score += piece_square(us, King, castle.king_to);
    next.score -= piece_square(us, Rook, castle.rook_from);
    next.score += piece_square(us, Rook, castle.rook_to);
    stack_.push_back(next);
    return;
  }
  next.score -= piece_square(us, moved, from);
  const PieceType promotion = move.promotion();
  if (promotion != NoPieceType) {
    next.score += piece_square(us, promotion, to);
    next.phase += kPhaseWeight[promotion];
  } else {
    next.score += piece_square(us, moved, to);
  }
  const PieceType captured = before.piece_type_on(to);
  if (captured != NoPieceType && before.color_on(to) == them) {
    next.score -= piece_square(them, captured, to);
    next.phase -= kPhaseWeight[captured];
  } else if (moved == Pawn && to == before.en_passant_square()) {
    next.score -= piece_square(them, Pawn, us == White ? to - 8 : to + 8);
  }
  stack_.push_back(next);
}

void HandCraftedEvaluator::on_undo_move() {
  assert(stack_.size() > 1);
  stack_.pop_back();
}

TaperedScore HandCraftedEvaluator::pawn_structure(const Position& position) {
  const Bitboard white_pawns = position.pieces(White, Pawn);
  const Bitboard black_pawns = position.pieces(Black, Pawn);
  const std::uint64_t key = mix(white_pawns ^ mix(black_pawns + 0x9e3779b97f4a7c15ULL)) | 1;
  PawnEntry& entry = pawn_table_[key & (kPawnTableSize - 1)];
  if (entry.key == key) return entry.score;

  TaperedScore total;
  for (Color color : {White, Black}) {
    const Bitboard ours = color == White ? white_pawns : black_pawns;
    const Bitboard theirs = color == White ? black_pawns : white_pawns;
    const Bitboard supported = pawn_attacks_bb(color, ours);
    TaperedScore score;
    Bitboard pawns = ours;
    while (pawns) {
      const Square square = pop_lsb(pawns);
      const int file = square % 8;
      const int relative_rank = color == White ? square / 8 : 7 - square / 8;
      const Bitboard neighbours = ours & adjacent_files(file);
      if (!neighbours) score += kIsolatedPawn;
      if (popcount(ours & file_bb(file)) > 1) {
        score.middlegame += kDoubledPawn.middlegame / 2;  // counted once per pawn of the pair
        score.endgame += kDoubledPawn.endgame / 2;
      }
      const Bitboard rank_neighbours = neighbours & (0xFFULL << (8 * (square / 8)));
      if ((supported & square_bb(square)) || rank_neighbours) score += kConnectedPawn;
      const bool own_pawn_ahead = (passed_span(color, square) & file_bb(file) & ours) != 0;
      if (!(passed_span(color, square) & theirs) && !own_pawn_ahead) {
        score.middlegame += kPassedMiddlegame[relative_rank];
        score.endgame += kPassedEndgame[relative_rank];
      }
    }
    if (color == White) {
      total += score;
    } else {
      total -= score;
    }
  }
  entry.key = key;
  entry.score = total;
  return total;
}

// Mobility, king attacks, bishop pair, rooks on files and the king's pawn shield for `us`
// (positive: good for `us`).
TaperedScore HandCraftedEvaluator::pieces_and_mobility(const Position& position, Color us) const {
  const Color them = us == White ? Black : White;
  const Bitboard occupied = position.occupied();
  const Bitboard own = position.pieces(us);
  const Bitboard our_pawns = position.pieces(us, Pawn);
  const Bitboard their_pawns = position.pieces(them, Pawn);
  const Bitboard unsafe = pawn_attacks_bb(them, their_pawns);
  const Square their_king = position.king_square(them);
  const Bitboard king_zone = attacks_from_king(their_king) | square_bb(their_king);

  TaperedScore score;
  int attack_units = 0, attackers = 0;
  bool queen_attacks = false;
  for (int type = Knight; type <= Queen; ++type) {
    Bitboard pieces = position.pieces(us, static_cast<PieceType>(type));
    while (pieces) {
      const Square square = pop_lsb(pieces);
      Bitboard attacks = 0;
      switch (type) {
        case Knight: attacks = attacks_from_knight(square); break;
        case Bishop: attacks = attacks_from_bishop(square, occupied); break;
        case Rook: attacks = attacks_from_rook(square, occupied); break;
        default: attacks = attacks_from_queen(square, occupied); break;
      }
      if (terms_.mobility) {
        const int mobility = popcount(attacks & ~own & ~unsafe) - kMobilityCentre[type];
        score.middlegame += mobility * kMobilityWeight[type].middlegame;
        score.endgame += mobility * kMobilityWeight[type].endgame;
      }
      const Bitboard zone_hits = attacks & king_zone;
      if (zone_hits) {
        ++attackers;
        attack_units += kAttackUnits[type] * popcount(zone_hits);
        queen_attacks = queen_attacks || type == Queen;
      }
      if (terms_.pieces && type == Rook) {
        const Bitboard file = file_bb(square % 8);
        if (!(file & our_pawns)) score += (file & their_pawns) ? kRookSemiOpenFile : kRookOpenFile;
      }
    }
  }
  if (terms_.king_safety) {
    if (attackers >= 2 || (queen_attacks && attackers >= 1 && attack_units >= 10)) {
      score.middlegame += std::min(kMaxKingDanger, attack_units * attack_units / 4);
    }
    // Our own king's pawn shield, while it sits on its first two ranks.
    const Square king = position.king_square(us);
    const int relative_rank = us == White ? king / 8 : 7 - king / 8;
    if (relative_rank <= 1) {
      const int file = king % 8;
      const Bitboard files = file_bb(file) | adjacent_files(file);
      const Bitboard shield_ranks = us == White ? 0x0000000000FFFF00ULL << (8 * (king / 8))
                                                : 0x00FFFF0000000000ULL >> (8 * (7 - king / 8));
      const int missing = popcount(files) / 8 - popcount(our_pawns & files & shield_ranks);
      score.middlegame += kShieldPawnMissing.middlegame * std::max(0, missing);
    }
  }
  if (terms_.pieces && popcount(position.pieces(us, Bishop)) >= 2) score += kBishopPair;
  return score;
}

int HandCraftedEvaluator::evaluate(const Position& position) {
  assert(!stack_.empty());
  const Accumulator& accumulator = stack_.back();
#ifndef NDEBUG
  {
    const Accumulator check = accumulate(position);
    assert(check.score.middlegame == accumulator.score.middlegame);
    assert(check.score.endgame == accumulator.score.endgame);
    assert(check.phase == accumulator.phase);
  }
#endif
  TaperedScore score = accumulator.score;  // White's view
  if (terms_.pawn_structure) score += pawn_structure(position);
  score += pieces_and_mobility(position, White);
  score -= pieces_and_mobility(position, Black);

  const int phase = std::min(accumulator.phase, kFullPhase);
  int blended = (score.middlegame * phase + score.endgame * (kFullPhase - phase)) / kFullPhase;

  // Without pawns, a side up by less than a rook's worth can rarely win: scale towards a draw.
  const Color strong = blended >= 0 ? White : Black;
  if (!position.pieces(strong, Pawn)) {
    const auto non_pawn = [&](Color color) {
      int total = 0;
      for (int type = Knight; type <= Queen; ++type) {
        total += kMaterialMiddlegame[type] *
                 popcount(position.pieces(color, static_cast<PieceType>(type)));
      }
      return total;
    };
    const Color weak = strong == White ? Black : White;
    if (non_pawn(strong) - non_pawn(weak) < kMaterialMiddlegame[Rook]) blended /= 4;
  }

  const int relative = position.side_to_move() == White ? blended : -blended;
  return std::clamp(relative + kTempo, -kEvaluationBound + 1, kEvaluationBound - 1);
}

std::unique_ptr<Evaluator> make_evaluator(const std::string& name) {
  if (name == "hce") return std::make_unique<HandCraftedEvaluator>();
  if (name.rfind("nnue:", 0) == 0) return make_nnue_evaluator(name.substr(5));  // nnue_file.h
  if (name.rfind("latent:", 0) == 0) return make_latent_evaluator(name.substr(7));  // latent_encoder.h
  if (name == "pesto") {
    HandCraftedTerms terms;
    terms.pawn_structure = terms.mobility = terms.king_safety = terms.pieces = false;
    return std::make_unique<HandCraftedEvaluator>(terms);
  }
  throw std::invalid_argument("unknown evaluator '" + name + "' (known: hce, pesto, nnue:PATH, latent:KEY)");
}

}  // namespace latentchess::core
