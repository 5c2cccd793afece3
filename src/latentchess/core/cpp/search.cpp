// Alpha-beta search (see search.h for the contract).
//
// Invariants:
// - negamax(alpha, beta, depth, ply) returns a fail-soft score: <= alpha means "at most",
//   >= beta means "at least"; PV nodes are those with beta - alpha > 1.
// - One move loop searches every node, the root included (NodeType::Root): the root takes its
//   moves from root_moves_ instead of a move picker, decides nothing before them (table
//   cut-off, evaluation, pruning, extensions), searches them all to the full depth, records
//   them in root_moves_ and leaves the table and the history as they are.
// - Every do_move is paired with undo_move on all paths, including stops: after an interrupted
//   search the position and the evaluator are back at the root.
// - Lazy SMP (see search.h): helpers differ from the main thread only in their limits
//   (helper_limits), their iterations (helper_skips), no "depth 1 first" guarantee and no
//   callback; should_stop publishes each thread's node count every kNodesPerCheck nodes.
// - Pruning (null move, reverse futility, futility, late-move pruning, SEE pruning) never
//   applies at PV nodes' first move, in check, or when a mate score is at stake. The singular
//   extension's multi-cut (any node, depth >= 7, not the root) only uses non-mate table scores.
// - The table keeps the evaluator's static evaluation; the search uses it plus the correction
//   history's share (correction_history_percent, 0: off), which only non-mate results of nodes
//   not in check, with a quiet or no best move, update.
#include "search.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "bitboard.h"
#include "see.h"

namespace latentchess::core {
namespace {

// The stop flag and the clock are read every kNodesPerCheck nodes (well under a millisecond at
// this engine's speed); a Python poll, which needs the GIL, every kNodesPerPoll.
constexpr std::uint64_t kNodesPerCheck = 256;
constexpr std::uint64_t kNodesPerPoll = 1024;

bool is_mate_score(int score) { return std::abs(score) >= kMateInMaxPly; }

// Whether `move` may give check: exact for ordinary moves (direct and discovered checks);
// castling, en passant and promotions answer true (they are never pruned on this basis).
bool may_give_check(const Position& position, Move move) {
  const Square from = move.from(), to = move.to();
  const PieceType moved = position.piece_type_on(from);
  if (move.promotion() != NoPieceType) return true;
  if (moved == King && position.is_castling(move)) return true;
  if (moved == Pawn && to == position.en_passant_square()) return true;
  const Color us = position.side_to_move();
  const Color them = us == White ? Black : White;
  const Square king = position.king_square(them);
  const Bitboard occupied = (position.occupied() ^ square_bb(from)) | square_bb(to);
  Bitboard direct = 0;
  switch (moved) {
    case Pawn: direct = attacks_from_pawn(us, to); break;
    case Knight: direct = attacks_from_knight(to); break;
    case Bishop: direct = attacks_from_bishop(to, occupied); break;
    case Rook: direct = attacks_from_rook(to, occupied); break;
    case Queen: direct = attacks_from_queen(to, occupied); break;
    default: break;
  }
  if (direct & square_bb(king)) return true;
  const Bitboard others = ~square_bb(from);
  const Bitboard diagonal =
      (position.pieces(us, Bishop) | position.pieces(us, Queen)) & others;
  const Bitboard straight = (position.pieces(us, Rook) | position.pieces(us, Queen)) & others;
  return (attacks_from_bishop(king, occupied) & diagonal) ||
         (attacks_from_rook(king, occupied) & straight);
}

}  // namespace

Search::Search(const Position& root, TranspositionTable& table, Evaluator& evaluator,
               SearchHistory& history, const SearchLimits& limits,
               TimeManager::Clock::time_point start, const std::atomic<bool>& stop_requested,
               StopPoll poll, int thread_index, const SearchParameters& parameters)
    : position_(root),
      table_(table),
      evaluator_(evaluator),
      limits_(limits),
      parameters_(parameters),
      time_(limits, start, parameters,
            2 * (root.fullmove_number() - 1) + (root.side_to_move() == Black ? 1 : 0)),
      stop_requested_(stop_requested),
      poll_(std::move(poll)),
      history_(history),
      thread_index_(thread_index) {
  // Hundredths divided by 100.0 give exactly the literals 0.75 and 2.25 of the defaults.
  const double base = parameters_.lmr_base_percent / 100.0;
  const double divisor = parameters_.lmr_divisor_percent / 100.0;
  for (int depth = 1; depth < 64; ++depth) {
    for (int number = 1; number < 64; ++number) {
      const double reduction = base + std::log(depth) * std::log(number) / divisor;
      reductions_[depth][number] = static_cast<std::uint8_t>(std::max(0.0, reduction));
    }
  }
}

// -- position bookkeeping -------------------------------------------------------------------------

void Search::do_move(Move move) {
  // The child's bucket loads while the evaluator updates its accumulators; a move whose key the
  // guess misses (castling, en passant, promotion, lost castling rights) is prefetched after.
  const std::uint64_t guess = position_.key_after(move);
  table_.prefetch(guess);
  evaluator_.on_do_move(position_, move);
  position_.do_move(move);
  if (position_.key() != guess) table_.prefetch(position_.key());
}

void Search::undo_move() {
  position_.undo_move();
  evaluator_.on_undo_move();
}

void Search::do_null_move() {
  evaluator_.on_do_null_move();
  position_.do_null_move();
}

void Search::undo_null_move() {
  position_.undo_null_move();
  evaluator_.on_undo_null_move();
}

bool Search::is_draw() const {
  return position_.is_fifty_move_draw() || position_.is_insufficient_material() ||
         position_.is_repetition(1);
}

bool Search::has_non_pawn_material(Color color) const {
  return (position_.pieces(color) & ~position_.pieces(color, Pawn) &
          ~position_.pieces(color, King)) != 0;
}

bool Search::should_stop() {
  if (stopped_) return true;
  // The main thread's depth 1 always completes (a few hundred nodes); a helper's need not.
  if (completed_depth_ == 0 && thread_index_ == 0) return false;
  // The node limit counts every thread's nodes (the others' as last published).
  if (limits_.nodes != 0 && nodes_ + peer_nodes_ >= limits_.nodes) return stopped_ = true;
  if ((nodes_ & (kNodesPerCheck - 1)) != 0) return false;
  published_nodes_.store(nodes_, std::memory_order_relaxed);
  if (!peers_.empty()) peer_nodes_ = total_nodes() - nodes_;
  if (stop_requested_.load(std::memory_order_relaxed)) return stopped_ = true;
  if (time_.past_hard_limit()) return stopped_ = true;
  if (poll_ && (nodes_ & (kNodesPerPoll - 1)) == 0 && poll_()) return stopped_ = true;
  return false;
}

std::uint64_t Search::total_nodes() const {
  std::uint64_t total = nodes_;
  for (const Search* peer : peers_) total += peer->published_nodes();
  return total;
}

Search::Completed Search::completed() const {
  const std::lock_guard<std::mutex> lock(completed_mutex_);
  return completed_;
}

SearchLimits Search::helper_limits(const SearchLimits& limits) {
  SearchLimits helper = limits;  // root moves, orders, pruning switches, depth and nodes
  helper.movetime_ms = -1;
  helper.time_left_ms = -1;
  helper.increment_ms = 0;
  helper.moves_to_go = 0;
  helper.mate_in = 0;
  helper.infinite = true;
  helper.multipv = 1;
  helper.spent_ms = 0;
  return helper;
}

bool Search::helper_skips(int thread_index, int depth) {
  // Helpers cycle through 20 patterns: with a period of 2 * size plies, a helper searches
  // `size` iterations and leaves out the next `size`, starting at `phase`. Pattern c belongs to
  // size s where s * (s - 1) <= c < s * (s + 1) (sizes 1, 2, 3, 4 take 2, 4, 6, 8 patterns),
  // and its phase is c - s * (s - 1). So helper 1 searches the even depths, helper 2 the odd
  // ones, helpers 3-6 pairs of depths at each offset, and so on: the threads spread over the
  // next iterations instead of all searching the same one.
  const int pattern = (thread_index - 1) % 20;
  int size = 1;
  while (pattern >= size * (size + 1)) ++size;
  const int phase = pattern - size * (size - 1);
  return ((depth + phase) / size) % 2 == 1;
}

const std::vector<Move>* Search::external_order(int ply) const {
  // hybrid: external move orders apply near the root only (a hash lookup per node is cheap, but
  // the orders are only computed for the first plies anyway).
  if (ply > kExternalOrderPlies || limits_.move_orders.empty()) return nullptr;
  const auto found = limits_.move_orders.find(position_.key());
  return found == limits_.move_orders.end() ? nullptr : &found->second;
}

void Search::update_pv(int ply, Move move) {
  pv_table_[ply][0] = move;
  const int child_length = pv_length_[ply + 1];
  for (int i = 0; i < child_length; ++i) pv_table_[ply][i + 1] = pv_table_[ply + 1][i];
  pv_length_[ply] = child_length + 1;
}

int Search::history_bonus(int depth) const {
  return std::min(depth * depth * parameters_.history_bonus_per_depth_squared +
                      depth * parameters_.history_bonus_per_depth,
                  parameters_.history_bonus_max);
}

void Search::update_quiet_stats(int ply, Move best, const Move* tried, int tried_count,
                                int depth, Bitboard threats) {
  PlyState& state = plies_[ply];
  if (state.killers[0] != best) {
    state.killers[1] = state.killers[0];
    state.killers[0] = best;
  }
  const int bonus = history_bonus(depth);
  const Color us = position_.side_to_move();
  int previous[kContinuationPlies];
  for (int i = 0; i < kContinuationPlies; ++i) previous[i] = continuation_slot(ply, i);
  const auto reward = [&](Move move, int amount) {
    history_.butterfly.update(us, move, amount, threats);
    const int slot = slot_of(move);
    for (int earlier : previous) history_.continuation.update(earlier, slot, amount);
  };
  reward(best, bonus);
  for (int i = 0; i < tried_count; ++i) {
    if (tried[i] != best) reward(tried[i], -bonus);
  }
  if (previous[0] >= 0) history_.counter_moves[previous[0]] = best;
}

void Search::update_continuation(int ply, int amount) {
  const int slot = plies_[ply].slot;
  for (int i = 0; i < kContinuationPlies; ++i) {
    history_.continuation.update(continuation_slot(ply, i), slot, amount);
  }
}

void Search::update_capture_stats(Move best, const Move* tried, int tried_count, int depth) {
  if (parameters_.capture_history_divisor == 0) return;  // off: the table is never read
  const int bonus = history_bonus(depth);
  const auto reward = [&](Move move, int amount) {
    history_.captures.update(slot_of(move), captured_type(position_, move), amount);
  };
  if (best != Move::none()) reward(best, bonus);
  for (int i = 0; i < tried_count; ++i) {
    if (tried[i] != best) reward(tried[i], -bonus);
  }
}

int Search::continuation_slot(int ply, int index) const {
  constexpr int kBack[kContinuationPlies] = {1, 2, 4, 6};
  const int back = kBack[index];
  if (ply < back || (index >= 2 && parameters_.continuation_far == 0)) return -1;
  return plies_[ply - back].slot;
}

int Search::slot_of(Move move) const {
  return history_slot(position_.side_to_move(), position_.piece_type_on(move.from()), move.to());
}

QuietContext Search::capture_context() const {
  QuietContext context;
  context.captures = &history_.captures;
  context.capture_divisor = parameters_.capture_history_divisor;
  return context;
}

Bitboard Search::butterfly_threats() const {
  return parameters_.threat_history > 0
             ? attacked_squares(position_, ~position_.side_to_move())
             : Bitboard{0};
}

QuietContext Search::quiet_context(int ply) const {
  QuietContext context = capture_context();
  for (int i = 0; i < kContinuationPlies; ++i) {
    context.continuation[i] = history_.continuation.row(continuation_slot(ply, i));
  }
  if (ply >= 1 && plies_[ply - 1].slot >= 0) {
    context.counter_move = history_.counter_moves[plies_[ply - 1].slot];
  }
  context.threat_order = parameters_.threat_order;
  context.check_order = parameters_.check_order;
  const Color them = ~position_.side_to_move();
  const Bitboard occupied = position_.occupied();
  // The opponent's attacks, computed once for both the threat-indexed history and the order.
  if (parameters_.threat_history > 0 || context.threat_order > 0) {
    const AttackLayers layers = attack_layers(position_, them);
    if (parameters_.threat_history > 0) context.threats = layers.all;
    if (context.threat_order > 0) {
      context.attacked_by_pawns = layers.pawns;
      context.attacked_by_minors = layers.minors;
      context.attacked_by_rooks = layers.rooks;
    }
  }
  if (context.check_order > 0) {
    const Square king = position_.king_square(them);
    context.checking_squares[Pawn] = pawn_attacks_bb(them, square_bb(king));
    context.checking_squares[Knight] = attacks_from_knight(king);
    context.checking_squares[Bishop] = attacks_from_bishop(king, occupied);
    context.checking_squares[Rook] = attacks_from_rook(king, occupied);
    context.checking_squares[Queen] =
        context.checking_squares[Bishop] | context.checking_squares[Rook];
  }
  return context;
}

// -- iterative deepening ----------------------------------------------------------------------

SearchResult Search::run(const IterationCallback& on_iteration) {
  // The table's generation advances once per search, for all threads (SearchEngine::search).
  evaluator_.reset(position_);
  SearchResult result;

  // A first order before depth 1: the table move, then captures by SEE (as everywhere else).
  {
    const ProbeResult entry = table_.probe(position_.key());
    const Move killers[2] = {Move::none(), Move::none()};
    MovePicker picker(position_, MovePicker::Kind::All, entry.hit ? entry.move : Move::none(),
                      killers, history_.butterfly, external_order(0));
    std::vector<RootMove> ordered;
    for (Move move = picker.next(); move != Move::none(); move = picker.next()) {
      // hybrid: `searchmoves` restricts the root (an empty list means every move).
      const auto& allowed = limits_.search_moves;
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), move) == allowed.end()) {
        continue;
      }
      ordered.push_back(RootMove{move});
    }
    root_moves_ = std::move(ordered);
  }
  if (root_moves_.empty()) return result;  // checkmate or stalemate: no move, no lines

  const int lines = std::clamp(limits_.multipv, 1, static_cast<int>(root_moves_.size()));
  const int max_depth = limits_.depth > 0 ? std::min(limits_.depth, kMaxPly - 1) : kMaxPly - 1;
  // MultiPV: the root moves as the last completed iteration left them (see the end of run).
  std::vector<RootMove> completed;
  Move previous_best = Move::none();
  int previous_best_score = -kInfinity;
  int stable_iterations = 0;
  for (int depth = 1; depth <= max_depth; ++depth) {
    // Helpers always search depth 1 (a result to fall back on), then their share of the rest.
    if (thread_index_ > 0 && depth > 1 && helper_skips(thread_index_, depth)) continue;
    root_depth_ = depth;
    for (RootMove& root : root_moves_) {
      root.previous_score = root.score;
      root.score = -kInfinity;
    }
    for (pv_index_ = 0; pv_index_ < lines && !stopped_; ++pv_index_) {
      seldepth_ = 0;
      const int previous = root_moves_[pv_index_].previous_score;
      int delta = parameters_.aspiration_delta;
      int alpha = -kInfinity, beta = kInfinity;
      if (depth >= 4 && previous > -kInfinity && !is_mate_score(previous)) {
        alpha = std::max(previous - delta, -kInfinity);
        beta = std::min(previous + delta, kInfinity);
      }
      int failed_high = 0;  // aspiration_fail_high_depth: plies less after each fail high
      while (true) {
        const int search_depth = std::max(depth - failed_high, (depth + 1) / 2);
        const int score = negamax<NodeType::Root>(alpha, beta, search_depth, 0, false);
        std::stable_sort(root_moves_.begin() + pv_index_, root_moves_.end(),
                         [](const RootMove& a, const RootMove& b) { return a.score > b.score; });
        if (stopped_) break;
        if (score <= alpha) {
          failed_high = 0;
          beta = (alpha + beta) / 2;
          alpha = std::max(score - delta, -kInfinity);
        } else if (score >= beta) {
          beta = std::min(score + delta, kInfinity);
          failed_high += parameters_.aspiration_fail_high_depth;
        } else {
          break;
        }
        delta += delta / 2 + 5;
      }
      std::stable_sort(root_moves_.begin(), root_moves_.begin() + pv_index_ + 1,
                       [](const RootMove& a, const RootMove& b) { return a.score > b.score; });
    }
    if (stopped_) {
      // Moves whose search completed this iteration keep their scores; the rest keep the last
      // iteration's order. If even the first move did not complete, nothing changes.
      if (root_moves_[0].score == -kInfinity) {
        for (RootMove& root : root_moves_) root.score = root.previous_score;
      }
      break;
    }
    completed_depth_ = depth;
    if (lines > 1) completed = root_moves_;
    result.last = report(depth, lines);
    if (on_iteration) on_iteration(result.last);
    if (thread_index_ > 0) {  // for the main thread's choice of the move (SearchEngine::search)
      const std::lock_guard<std::mutex> lock(completed_mutex_);
      completed_.report = result.last;
      completed_.best_move = root_moves_[0].move;
      completed_.ponder_move = root_moves_[0].pv.size() > 1 ? root_moves_[0].pv[1] : Move::none();
    }

    const int best = root_moves_[0].score;
    // How settled the search is decides how long it goes on (clocked searches only): a best
    // move that has held for iterations needs less time, a new one or a falling score more.
    if (depth >= 4) {
      stable_iterations = root_moves_[0].move == previous_best ? stable_iterations + 1 : 0;
      double factor = stable_iterations == 0 ? parameters_.time_unstable_percent / 100.0
                                             : std::max(0.7, 1.1 - 0.1 * stable_iterations);
      if (previous_best_score != -kInfinity &&
          best < previous_best_score - parameters_.time_score_drop) {
        factor *= parameters_.time_score_drop_percent / 100.0;
      }
      if (parameters_.time_node_share_percent > 0 && nodes_ > 0) {
        // The best move's share of the tree: near 1 when nothing else needed a look.
        const double share =
            static_cast<double>(root_moves_[0].nodes) / static_cast<double>(nodes_);
        factor *= (1.5 - share) * parameters_.time_node_share_percent / 100.0;
      }
      time_.scale_iteration_time(factor);
    }
    previous_best = root_moves_[0].move;
    previous_best_score = best;
    if (limits_.mate_in > 0 && best >= kMateInMaxPly && (kMate - best + 1) / 2 <= limits_.mate_in) {
      break;
    }
    if (!limits_.infinite && root_moves_.size() == 1 && time_.has_deadline() && depth >= 4) break;
    if (!time_.may_start_iteration()) break;
    if (stop_requested_.load() || (poll_ && poll_())) break;
  }

  // The final view. One line: the last completed depth, with the root order as far as the
  // interrupted iteration got (a move that beat the previous best there is played). Several
  // lines: exactly the last completed iteration, because an interrupted one has searched only
  // its first lines at the new depth, and mixing those with the older depth's scores of the
  // rest reported lower-scored lines above higher ones. Either way the best move and the first
  // line agree.
  if (lines > 1 && stopped_ && !completed.empty()) root_moves_ = std::move(completed);
  result.last = report(std::max(1, result.last.depth), lines);
  result.best_move = root_moves_[0].move;
  if (root_moves_[0].pv.size() > 1) result.ponder_move = root_moves_[0].pv[1];
  result.nodes = nodes_;
  result.time_ms = time_.elapsed_ms();
  result.soft_ms = time_.soft_ms();
  result.hard_ms = time_.hard_ms();
  result.thread = thread_index_;
  return result;
}

IterationReport Search::report(int depth, int lines) const {
  IterationReport report;
  report.depth = depth;
  report.seldepth = std::max(seldepth_, depth);
  report.nodes = total_nodes();
  report.time_ms = time_.elapsed_ms();
  report.hashfull = table_.hashfull();
  for (int i = 0; i < lines; ++i) {
    const RootMove& root = root_moves_[i];
    PrincipalVariation line;
    line.multipv = i + 1;
    line.score = root.score > -kInfinity ? root.score : root.previous_score;
    if (line.score == -kInfinity) line.score = 0;
    line.bound = root.bound;
    line.moves = root.pv.empty() ? std::vector<Move>{root.move} : root.pv;
    report.lines.push_back(std::move(line));
  }
  return report;
}

// -- the main search ----------------------------------------------------------------------------

template <Search::NodeType node_type>
int Search::negamax(int alpha, int beta, int depth, int ply, bool cut_node) {
  constexpr bool root_node = node_type == NodeType::Root;
  const bool pv_node = beta - alpha > 1;
  // The root's window is the aspiration window (never a null window) and its depth the
  // iteration's, or less after fail highs (aspiration_fail_high_depth).
  assert(!root_node || (pv_node && ply == 0 && !cut_node && depth <= root_depth_));
  pv_length_[ply] = 0;
  if constexpr (!root_node) {
    if (should_stop()) return 0;
    ++nodes_;
    if (ply > seldepth_) seldepth_ = ply;

    if (is_draw()) return kDraw;
    if (ply >= kMaxPly) return evaluator_.evaluate(position_);

    // Mate distance pruning: no line from here can beat a shorter mate already in hand.
    alpha = std::max(alpha, -kMate + ply);
    beta = std::min(beta, kMate - ply - 1);
    if (alpha >= beta) return alpha;
  }

  const bool in_check = position_.in_check();
  if (in_check) depth += parameters_.check_extension;  // check extension
  if (depth <= 0) {
    --nodes_;  // counted again by the quiescence search
    return quiescence(alpha, beta, ply);
  }
  plies_[ply + 2].cutoff_count = 0;  // counts for this node's children's late-move reductions

  const std::uint64_t key = position_.key();
  const Color us = position_.side_to_move();
  // A singular-extension verification searches this node again without one move: the table's
  // score (which includes that move) may neither cut it off nor be overwritten by it.
  const Move excluded = plies_[ply].excluded;
  Move table_move = Move::none();
  int raw_eval = 0;  // the evaluator's; the table keeps it (corrections change)
  int static_eval = -kInfinity;
  int eval = -kInfinity;
  bool improving = false;
  int singular_extension = 0;
  // On the PV, or stored from it once (kept through a singular verification of the same node).
  bool table_pv = pv_node;
  bool likely_fail_low = false;  // a PV node whose table says the moves fail low here
  if constexpr (root_node) plies_[ply].table_pv = true;

  // Before the moves: the table, the evaluation, pruning and the singular extension. The root
  // has none of it: run() ordered its moves, nothing may cut it off, and it leaves the table,
  // the static evaluations of the plies and the killers one ply down as they are.
  if constexpr (!root_node) {
    const ProbeResult entry = table_.probe(key);
    if (entry.hit && entry.move != Move::none() && position_.is_pseudo_legal(entry.move) &&
        position_.is_legal(entry.move)) {
      table_move = entry.move;
    }
    table_pv = excluded != Move::none() ? plies_[ply].table_pv
                                        : pv_node || (entry.hit && entry.was_pv);
    likely_fail_low = pv_node && table_move != Move::none() && entry.bound == Bound::Upper &&
                      entry.depth >= depth;
    plies_[ply].table_pv = table_pv;
    if (entry.hit && !pv_node && excluded == Move::none() && entry.depth >= depth) {
      const int score = score_from_table(entry.score, ply);
      if (entry.bound == Bound::Exact || (entry.bound == Bound::Lower && score >= beta) ||
          (entry.bound == Bound::Upper && score <= alpha)) {
        if (parameters_.table_cut_history > 0 && score >= beta && table_move != Move::none() &&
            !is_tactical(position_, table_move)) {
          update_quiet_stats(ply, table_move, nullptr, 0, depth, butterfly_threats());
        }
        return score;
      }
    }

    if (in_check) {
      static_eval = -kInfinity;
    } else {
      raw_eval = raw_evaluation(entry);
      static_eval = corrected_evaluation(raw_eval);
    }
    plies_[ply].static_eval = static_eval;
    improving = !in_check && ply >= 2 && plies_[ply - 2].static_eval != -kInfinity &&
                static_eval > plies_[ply - 2].static_eval;
    plies_[ply + 1].killers[0] = plies_[ply + 1].killers[1] = Move::none();

    // The opponent's quiet move that led here is judged by how much it changed the static
    // evaluation (both sides' views: the sum is the swing in its favour, negated).
    if (parameters_.eval_history > 0 && !in_check && excluded == Move::none() && ply >= 2 &&
        plies_[ply - 1].quiet && plies_[ply - 1].static_eval != -kInfinity) {
      const int swing = plies_[ply - 1].static_eval + static_eval;
      const int bonus = std::clamp(-parameters_.eval_history * swing,
                                   -parameters_.history_bonus_max, parameters_.history_bonus_max);
      history_.butterfly.update(~us, plies_[ply - 1].current, bonus, plies_[ply - 1].threats);
    }

    // The table's score is a better guess than the static evaluation where its bound points
    // past it (the pruning decisions below use it; `improving` stays on static evaluations).
    eval = static_eval;
    if (!in_check && entry.hit && entry.depth > 0 && excluded == Move::none()) {
      const int table_score = score_from_table(entry.score, ply);
      if (!is_mate_score(table_score) &&
          (entry.bound == Bound::Exact || (entry.bound == Bound::Lower && table_score > eval) ||
           (entry.bound == Bound::Upper && table_score < eval))) {
        eval = table_score;
      }
    }

    if (!pv_node && !in_check && !is_mate_score(beta)) {
      // Reverse futility: far above beta at low depth, a quiet move will not bring it back.
      if (limits_.reverse_futility_pruning && depth <= parameters_.reverse_futility_depth &&
          eval - parameters_.reverse_futility_margin * (depth - improving) >= beta) {
        return parameters_.reverse_futility_blend > 0 ? (eval + beta) / 2 : eval;
      }

      // Razoring: far below alpha at low depth, let the quiescence search confirm the fail-low.
      if (parameters_.razoring_margin > 0 && depth <= 3 && excluded == Move::none() &&
          eval + parameters_.razoring_margin * depth < alpha) {
        const int score = quiescence(alpha - 1, alpha, ply);
        if (stopped_) return 0;
        if (score < alpha) return score;
      }

      // Null move: if passing still holds beta, a real move would too (not in zugzwang-prone
      // pawn endings).
      if (depth >= 3 && eval >= beta && !plies_[ply - 1].null_move && excluded == Move::none() &&
          has_non_pawn_material(us)) {
        const int reduction = parameters_.null_move_base_reduction +
                              depth / parameters_.null_move_depth_divisor +
                              std::min(parameters_.null_move_eval_max_reduction,
                                       (eval - beta) / parameters_.null_move_eval_divisor);
        plies_[ply].current = Move::none();
        plies_[ply].slot = -1;
        plies_[ply].quiet = false;
        plies_[ply].null_move = true;
        do_null_move();
        const int score = -negamax<NodeType::Interior>(-beta, -beta + 1, depth - 1 - reduction,
                                                       ply + 1, !cut_node);
        undo_null_move();
        plies_[ply].null_move = false;
        if (stopped_) return 0;
        if (score >= beta) return is_mate_score(score) ? beta : score;
      }

      // ProbCut: a capture that holds a bound well above beta at a reduced depth (first checked
      // by the quiescence search) says the full search would hold beta too.
      const int probcut_beta = beta + parameters_.probcut_margin;
      if (parameters_.probcut_margin > 0 && depth >= 5 && excluded == Move::none() &&
          !is_mate_score(probcut_beta) &&
          !(entry.hit && entry.depth >= depth - 3 &&
            score_from_table(entry.score, ply) < probcut_beta)) {
        const Move no_killers[2] = {Move::none(), Move::none()};
        const QuietContext context = capture_context();
        MovePicker captures(position_, MovePicker::Kind::Tactical, table_move, no_killers,
                            history_.butterfly, nullptr, &context);
        for (Move move = captures.next(); move != Move::none(); move = captures.next()) {
          if (!see_at_least(position_, move, probcut_beta - static_eval)) continue;
          plies_[ply].current = move;
          plies_[ply].slot = slot_of(move);
          plies_[ply].quiet = false;  // ProbCut tries tactical moves only
          plies_[ply + 1].double_extensions = plies_[ply].double_extensions;
          do_move(move);
          int score = -quiescence(-probcut_beta, -probcut_beta + 1, ply + 1);
          if (score >= probcut_beta) {
            score = -negamax<NodeType::Interior>(-probcut_beta, -probcut_beta + 1, depth - 4,
                                                 ply + 1, !cut_node);
          }
          undo_move();
          if (stopped_) return 0;
          if (score >= probcut_beta) {
            table_.store(key, move, score_to_table(score, ply), raw_eval, depth - 3,
                         Bound::Lower, table_pv);
            return score;
          }
        }
      }
    }
    // Internal iterative reduction: without a table move this node was never searched well.
    if (table_move == Move::none() && depth >= parameters_.iir_depth && (pv_node || cut_node)) {
      --depth;
    }

    // Singular extension: is the table move the only good one? Search the others at half depth
    // against a bound just under its score; if all fail low it is extended one ply. If even
    // without it the node holds a bound at or above beta, several moves do: cut (multi-cut).
    if (limits_.singular_extensions && depth >= parameters_.singular_min_depth &&
        table_move != Move::none() && excluded == Move::none() && entry.depth >= depth - 3 &&
        (entry.bound == Bound::Lower || entry.bound == Bound::Exact) &&
        ply < 2 * root_depth_) {
      const int table_score = score_from_table(entry.score, ply);
      if (!is_mate_score(table_score)) {
        const int singular_beta = table_score - parameters_.singular_margin_per_depth * depth;
        plies_[ply].excluded = table_move;
        const int score = negamax<NodeType::Interior>(singular_beta - 1, singular_beta,
                                                      (depth - 1) / 2, ply, cut_node);
        plies_[ply].excluded = Move::none();
        if (stopped_) return 0;
        if (score < singular_beta) {
          singular_extension = 1;
          if (parameters_.singular_double_margin > 0 && !pv_node &&
              score < singular_beta - parameters_.singular_double_margin &&
              plies_[ply].double_extensions < kMaxDoubleExtensions) {
            singular_extension = 2;
          }
        } else if (singular_beta >= beta) {
          return singular_beta;
        } else if (table_score >= beta) {
          singular_extension = -parameters_.singular_negative_extension;
        }
      }
    }
  }

  // The moves in order: at the root, the root moves from the line in progress on (MultiPV), as
  // run() and the last iteration sorted them; elsewhere the move picker's.
  const QuietContext context = quiet_context(ply);
  plies_[ply].threats = context.threats;
  std::optional<MovePicker> picker;
  std::size_t next_root_move = pv_index_;
  if constexpr (!root_node) {
    picker.emplace(position_, MovePicker::Kind::All, table_move, plies_[ply].killers,
                   history_.butterfly, external_order(ply), &context);
    if (picker->size() == 0) return in_check ? -kMate + ply : kDraw;
  }
  int order_score = 0;
  const auto next_move = [&]() {
    if constexpr (root_node) {
      return next_root_move < root_moves_.size() ? root_moves_[next_root_move++].move
                                                 : Move::none();
    } else {
      return picker->next(&order_score);
    }
  };

  const int original_alpha = alpha;
  const bool table_move_tactical = table_move != Move::none() && is_tactical(position_, table_move);
  int best = -kInfinity;
  Move best_move = Move::none();
  Move quiets_tried[64];
  int quiet_count = 0;
  Move captures_tried[32];
  int capture_count = 0;
  int quiets_pruned = 0;
  int move_number = 0;
  for (Move move = next_move(); move != Move::none(); move = next_move()) {
    if (move == excluded) continue;
    ++move_number;
    const bool tactical = is_tactical(position_, move);
    const bool quiet = !tactical;

    // Pruning candidates at low depth; moves that give check are exempt (decided after the move).
    bool prune_unless_check = false;
    if (!root_node && best > -kMateInMaxPly && has_non_pawn_material(us) && !in_check) {
      // The depth the margins are measured at: the node's, or the one LMR would search to.
      const int margin_depth =
          parameters_.futility_lmr_depth > 0
              ? std::max(0, depth - 1 - reductions_[std::min(depth, 63)][std::min(move_number, 63)])
              : depth;
      // Late-move pruning: quiet moves this late rarely matter.
      if (limits_.late_move_pruning && quiet && depth <= 7 &&
          quiet_count + quiets_pruned >=
              (parameters_.late_move_pruning_base + depth * depth) / (improving ? 1 : 2)) {
        prune_unless_check = true;
      }
      // Futility pruning: so far below alpha at low depth that a quiet move cannot lift it.
      if (limits_.futility_pruning && quiet && !prune_unless_check &&
          depth <= parameters_.futility_depth &&
          eval + parameters_.futility_base + parameters_.futility_per_depth * margin_depth <=
              alpha) {
        prune_unless_check = true;
      }
      // Capture futility: even the victim with a margin cannot lift a low eval to alpha.
      if (limits_.futility_pruning && tactical && !prune_unless_check &&
          parameters_.capture_futility_margin > 0 && move.promotion() == NoPieceType &&
          depth <= parameters_.futility_depth) {
        const PieceType victim = position_.piece_type_on(move.to());
        const int gain = kSeeValue[victim == NoPieceType ? Pawn : victim];  // en passant: a pawn
        if (eval + gain + parameters_.capture_futility_margin +
                parameters_.futility_per_depth * margin_depth <=
            alpha) {
          prune_unless_check = true;
        }
      }
      // SEE pruning: a move that loses too much material.
      if (limits_.see_pruning && !prune_unless_check && depth <= parameters_.futility_depth &&
          move_number > 1) {
        const int threshold = tactical ? -parameters_.see_tactical_per_depth * depth
                                       : -parameters_.see_quiet_per_depth_squared *
                                             margin_depth * margin_depth;
        prune_unless_check = !see_at_least(position_, move, threshold);
      }
    }

    if (prune_unless_check && !may_give_check(position_, move)) {
      ++quiets_pruned;  // never searched: no history penalty on a later cut-off
      continue;
    }

    const int extension = move == table_move ? singular_extension : 0;
    plies_[ply].current = move;
    plies_[ply].slot = slot_of(move);
    plies_[ply].quiet = quiet;
    plies_[ply + 1].double_extensions = plies_[ply].double_extensions + (extension == 2 ? 1 : 0);
    const std::uint64_t nodes_before = nodes_;
    do_move(move);
    const bool gives_check = position_.in_check();
    int new_depth = depth - 1 + extension;
    int score = 0;
    if (move_number == 1) {
      score = -negamax<NodeType::Interior>(-beta, -alpha, new_depth, ply + 1,
                                           !pv_node && !cut_node);
    } else {
      // Late-move reductions (at the root only with lmr_root; it has no static evaluation, so
      // no `improving` term there).
      int reduction = 0;
      if ((!root_node || parameters_.lmr_root > 0) && depth >= 3 &&
          move_number > 1 + (pv_node ? 1 : 0) && (quiet || order_score < 0)) {
        reduction = reductions_[std::min(depth, 63)][std::min(move_number, 63)];
        if (pv_node) --reduction;
        if (!improving && !root_node) ++reduction;
        if (cut_node) reduction += parameters_.lmr_cut_node;
        if (table_move_tactical) reduction += parameters_.lmr_table_capture;
        if (table_pv && !likely_fail_low) reduction -= parameters_.lmr_table_pv;
        if (plies_[ply + 1].cutoff_count > 3) reduction += parameters_.lmr_cutoff_count;
        if (gives_check) --reduction;
        if (quiet && MovePicker::is_external(order_score)) {
          // hybrid: the external ranking decides (its first moves less, its last ones more).
          const int rank = MovePicker::kExternalScore - order_score;
          reduction += rank < 2 ? -1 : rank >= 6 ? 1 : 0;
        } else if (quiet) {
          reduction -= std::clamp(order_score / parameters_.lmr_history_divisor, -2, 2);
        }
        if (order_score >= MovePicker::kKillerScore) --reduction;
        reduction = std::clamp(reduction, 0, new_depth - 1);
      }
      score = -negamax<NodeType::Interior>(-alpha - 1, -alpha, new_depth - reduction, ply + 1,
                                           true);
      if (score > alpha && reduction > 0) {
        const int reduced_depth = new_depth - reduction;
        if (parameters_.lmr_deeper_margin > 0) {
          // Deeper past a clear margin, shallower when it barely beat the best so far.
          new_depth += (score > alpha + parameters_.lmr_deeper_margin + 11 * reduction) -
                       (score < best + new_depth);
        }
        if (new_depth > reduced_depth) {
          score = -negamax<NodeType::Interior>(-alpha - 1, -alpha, new_depth, ply + 1, !cut_node);
        }
        if (parameters_.lmr_deeper_margin > 0 && quiet && !stopped_) {
          update_continuation(ply, score > alpha ? history_bonus(new_depth)
                                                 : -history_bonus(new_depth));
        }
      }
      if (pv_node && score > alpha && score < beta) {
        score = -negamax<NodeType::Interior>(-beta, -alpha, new_depth, ply + 1, false);
      }
    }
    undo_move();
    if constexpr (root_node) {
      // The nodes under each root move, for the time manager (interrupted searches included).
      std::find_if(root_moves_.begin(), root_moves_.end(), [move](const RootMove& each) {
        return each.move == move;
      })->nodes += nodes_ - nodes_before;
    }
    if (stopped_) return 0;

    if constexpr (root_node) {
      // The first move's result, exact or a bound, and every move that raised alpha; a later
      // move that failed low keeps its place in the order but not a score.
      if (move_number == 1 || score > alpha) {
        RootMove& root = *std::find_if(root_moves_.begin() + pv_index_, root_moves_.end(),
                                       [move](const RootMove& each) { return each.move == move; });
        root.score = score;
        root.bound = score >= beta ? Bound::Lower : score <= alpha ? Bound::Upper : Bound::Exact;
        root.pv.assign(1, move);
        for (int k = 0; k < pv_length_[1]; ++k) root.pv.push_back(pv_table_[1][k]);
        if (score <= alpha) root.score = -kInfinity;  // failed low: order kept, not a result
      }
    }
    if (score > best) {
      best = score;
      if (score > alpha) {
        best_move = move;
        alpha = score;
        if (pv_node) update_pv(ply, move);
        if (score >= beta) {
          plies_[ply].cutoff_count += 1 + (table_move == Move::none() ? 1 : 0);
          // The root's cut-offs (aspiration fail-highs) leave the history as it is.
          if (!root_node && quiet) {
            update_quiet_stats(ply, move, quiets_tried, quiet_count, depth, context.threats);
          }
          if (!root_node) {
            update_capture_stats(quiet ? Move::none() : move, captures_tried, capture_count,
                                 depth);
          }
          break;
        }
      }
    }
    if (quiet && quiet_count < 64) quiets_tried[quiet_count++] = move;
    if (tactical && capture_count < 32) captures_tried[capture_count++] = move;
  }
  if (best == -kInfinity) {
    // Every move was pruned (only possible with non-pawn material and a score in hand; keep it
    // safe anyway): fall back to the static view.
    best = in_check ? -kMate + ply : alpha;
  }

  // The root's results are in root_moves_; it is never stored in the table.
  if constexpr (!root_node) {
    const Bound bound = best >= beta                         ? Bound::Lower
                        : (pv_node && best > original_alpha) ? Bound::Exact
                                                             : Bound::Upper;
    if (excluded == Move::none()) {
      // The opponent's quiet move into a node where every move failed low was a good one.
      if (parameters_.fail_low_prior_bonus > 0 && best <= original_alpha &&
          plies_[ply - 1].quiet && plies_[ply - 1].slot >= 0) {
        update_continuation(ply - 1, history_bonus(depth) * (depth > 5 ? 2 : 1));
      }
      // A fail-low under a PV node stays marked as once on the PV.
      const bool store_pv =
          table_pv || (bound == Bound::Upper && plies_[ply - 1].table_pv && depth > 3);
      table_.store(key, best_move, score_to_table(best, ply), in_check ? 0 : raw_eval, depth,
                   bound, store_pv);
      // Correction history: a quiet (or no) best move's result against the static evaluation,
      // unless its bound lies on the evaluation's side and so says nothing about the gap.
      if (!in_check && parameters_.correction_history_percent > 0 && !is_mate_score(best) &&
          (best_move == Move::none() || !is_tactical(position_, best_move)) &&
          !(bound == Bound::Lower && best <= static_eval) &&
          !(bound == Bound::Upper && best >= static_eval)) {
        history_.correction.update(us, position_.pieces(White, Pawn),
                                   position_.pieces(Black, Pawn), best - raw_eval, depth);
      }
    }
  }
  return best;
}

int Search::raw_evaluation(const ProbeResult& entry) {
  return entry.hit && std::abs(entry.static_eval) < kEvaluationBound
             ? entry.static_eval
             : evaluator_.evaluate(position_);
}

int Search::corrected_evaluation(int raw) const {
  if (parameters_.fifty_move_scaling > 0) {
    raw = raw * (200 - std::min(position_.halfmove_clock(), 100)) / 200;
  }
  if (parameters_.correction_history_percent == 0) return raw;
  const int correction = history_.correction.get(position_.side_to_move(),
                                                 position_.pieces(White, Pawn),
                                                 position_.pieces(Black, Pawn));
  return std::clamp(raw + correction * parameters_.correction_history_percent / 100,
                    -kEvaluationBound + 1, kEvaluationBound - 1);
}

int Search::quiescence(int alpha, int beta, int ply) {
  const bool pv_node = beta - alpha > 1;
  pv_length_[ply] = 0;
  if (should_stop()) return 0;
  ++nodes_;
  if (ply > seldepth_) seldepth_ = ply;
  if (is_draw()) return kDraw;
  if (ply >= kMaxPly) return evaluator_.evaluate(position_);

  const std::uint64_t key = position_.key();
  const ProbeResult entry = table_.probe(key);
  if (entry.hit && !pv_node) {
    const int score = score_from_table(entry.score, ply);
    if (entry.bound == Bound::Exact || (entry.bound == Bound::Lower && score >= beta) ||
        (entry.bound == Bound::Upper && score <= alpha)) {
      return score;
    }
  }

  const bool in_check = position_.in_check();
  int best = -kInfinity;
  int raw_eval = 0;
  int static_eval = -kInfinity;
  if (!in_check) {
    raw_eval = raw_evaluation(entry);
    static_eval = corrected_evaluation(raw_eval);
    best = static_eval;
    if (parameters_.quiescence_table_eval > 0 && entry.hit) {
      const int table_score = score_from_table(entry.score, ply);
      if (!is_mate_score(table_score) &&
          ((entry.bound == Bound::Lower && table_score > best) ||
           (entry.bound == Bound::Upper && table_score < best) || entry.bound == Bound::Exact)) {
        best = table_score;
      }
    }
    if (best >= beta) {  // stand pat
      return parameters_.quiescence_stand_pat_blend > 0 && !is_mate_score(best) ? (best + beta) / 2
                                                                                 : best;
    }
    alpha = std::max(alpha, best);
  }

  Move table_move = Move::none();
  if (entry.hit && entry.move != Move::none() && position_.is_pseudo_legal(entry.move) &&
      position_.is_legal(entry.move)) {
    table_move = entry.move;
  }
  const Move no_killers[2] = {Move::none(), Move::none()};
  const QuietContext context = capture_context();
  MovePicker picker(position_, in_check ? MovePicker::Kind::All : MovePicker::Kind::Tactical,
                    table_move, no_killers, history_.butterfly, nullptr, &context);
  if (in_check && picker.size() == 0) return -kMate + ply;

  const int original_alpha = alpha;
  Move best_move = Move::none();
  int order_score = 0;
  for (Move move = picker.next(&order_score); move != Move::none();
       move = picker.next(&order_score)) {
    if (!in_check) {
      // Delta pruning: even winning the piece would not reach alpha.
      const PieceType victim = position_.piece_type_on(move.to());
      if (move.promotion() == NoPieceType && victim != NoPieceType &&
          static_eval + kSeeValue[victim] + parameters_.quiescence_delta_margin <= alpha) {
        continue;
      }
      // Captures that lose material by SEE (the picker has judged all but the table move).
      if (order_score < 0) continue;
      if (order_score == MovePicker::kTableMoveScore && !see_at_least(position_, move, 0)) {
        continue;
      }
    }
    do_move(move);
    const int score = -quiescence(-beta, -alpha, ply + 1);
    undo_move();
    if (stopped_) return 0;
    if (score > best) {
      best = score;
      if (score > alpha) {
        best_move = move;
        alpha = score;
        if (pv_node) update_pv(ply, move);
        if (score >= beta) break;
      }
    }
  }
  const Bound bound = best >= beta ? Bound::Lower
                      : (pv_node && best > original_alpha) ? Bound::Exact
                                                           : Bound::Upper;
  table_.store(key, best_move, score_to_table(best, ply), in_check ? 0 : raw_eval, 0, bound,
               entry.hit && entry.was_pv);
  return best;
}

// -- the engine ---------------------------------------------------------------------------------

SearchEngine::SearchEngine(const std::string& evaluator, std::size_t hash_mb) : table_(hash_mb) {
  evaluators_.push_back(make_evaluator(evaluator));
  histories_.push_back(std::make_unique<SearchHistory>());
}

SearchEngine::~SearchEngine() { finish_helpers(); }

void SearchEngine::finish_helpers() {
  helpers_stop_.store(true);
  for (std::thread& thread : helper_threads_) thread.join();
  helper_threads_.clear();
  helper_searches_.clear();
  main_search_.reset();
}

void SearchEngine::set_parameters(const SearchParameters& parameters) {
  parameters.validate();
  finish_helpers();
  parameters_ = parameters;
}

void SearchEngine::set_threads(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("threads must lie in [1, " + std::to_string(kMaxThreads) +
                                "], got " + std::to_string(threads));
  }
  finish_helpers();
  while (static_cast<int>(evaluators_.size()) < threads) {
    evaluators_.push_back(evaluators_[0]->clone());
    histories_.push_back(std::make_unique<SearchHistory>());
  }
  evaluators_.resize(threads);
  histories_.resize(threads);
}

SearchResult SearchEngine::search(const Position& position, const SearchLimits& limits,
                                  const IterationCallback& on_iteration, StopPoll poll,
                                  const std::atomic<bool>* stop_flag) {
  // The clock starts first: waiting for the last search's helpers (stopped when it returned,
  // normally long finished) is charged to this move.
  const auto start = TimeManager::Clock::now();
  finish_helpers();
  if (stop_flag == nullptr) {
    stop_requested_.store(false);
    stop_flag = &stop_requested_;
  }
  table_.new_search();
  for (const auto& history : histories_) history->age();
  const int threads = this->threads();
  if (threads == 1) {
    Search main(position, table_, *evaluators_[0], *histories_[0], limits, start, *stop_flag,
                std::move(poll), 0, parameters_);
    return main.run(on_iteration);
  }

  // Lazy SMP: helpers on their own threads until the main thread returns.
  helpers_stop_.store(false);
  main_search_ = std::make_unique<Search>(position, table_, *evaluators_[0], *histories_[0],
                                          limits, start, *stop_flag, std::move(poll), 0,
                                          parameters_);
  const SearchLimits helper_limits = Search::helper_limits(limits);
  std::vector<const Search*> all{main_search_.get()};
  for (int i = 1; i < threads; ++i) {
    helper_searches_.push_back(std::make_unique<Search>(position, table_, *evaluators_[i],
                                                        *histories_[i], helper_limits, start,
                                                        helpers_stop_, nullptr, i, parameters_));
    all.push_back(helper_searches_.back().get());
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::vector<const Search*> peers = all;
    peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i));
    (i == 0 ? *main_search_ : *helper_searches_[i - 1]).set_peers(std::move(peers));
  }
  SearchResult result;
  try {
    for (const auto& helper : helper_searches_) {
      Search* search = helper.get();
      helper_threads_.emplace_back([search]() {
        try {
          search->run(nullptr);
        } catch (...) {
          // Nothing to report: the main thread only reads the iterations it completed.
        }
      });
    }
    result = main_search_->run(on_iteration);
  } catch (...) {
    finish_helpers();
    throw;
  }
  helpers_stop_.store(true);  // joined by the next use of the engine, not waited for here

  // The main thread's move, unless a helper completed a deeper iteration with a higher score
  // (one line, no depth limit: MultiPV and `go depth` report the main thread's iterations).
  std::uint64_t nodes = result.nodes;
  for (const auto& helper : helper_searches_) nodes += helper->published_nodes();
  if (limits.multipv <= 1 && limits.depth == 0 && !result.last.lines.empty()) {
    int best_depth = result.last.depth;
    int best_score = result.last.lines[0].score;
    for (std::size_t i = 0; i < helper_searches_.size(); ++i) {
      Search::Completed helper = helper_searches_[i]->completed();
      if (helper.best_move.is_none() || helper.report.lines.empty()) continue;
      if (helper.report.depth > best_depth && helper.report.lines[0].score > best_score) {
        best_depth = helper.report.depth;
        best_score = helper.report.lines[0].score;
        helper.report.time_ms = result.last.time_ms;
        helper.report.hashfull = result.last.hashfull;
        result.last = std::move(helper.report);
        result.best_move = helper.best_move;
        result.ponder_move = helper.ponder_move;
        result.thread = static_cast<int>(i) + 1;
      }
    }
  }
  result.nodes = nodes;
  result.last.nodes = nodes;
  return result;
}

void SearchEngine::new_game() {
  finish_helpers();
  table_.clear();
  for (const auto& history : histories_) history->clear();
}

}  // namespace latentchess::core
