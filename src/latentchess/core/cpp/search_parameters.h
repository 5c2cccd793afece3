// The search's tunable constants: pruning margins, reductions, extensions, the aspiration window
// and the time manager's iteration factors, gathered in one value type so that a tuner (SPSA:
// `latentchess tune spsa`, or an external tool driving UCI options) can set them per engine.
//
// Invariants:
// - The defaults are the constants the search was written with, or the value an SPRT kept
//   (noted at the field); `latentchess bench`'s node count is the signature of the defaults.
// - All fields are integers (UCI spin options); fractional constants are stored in hundredths
//   (`..._percent`) and divided by 100.0 where used, which reproduces the old literal exactly.
// - A SearchEngine owns one SearchParameters and lends it to every thread of a search (Lazy SMP
//   helpers included), so all threads search with the same values; they change only between
//   searches. validate() keeps values that would break the search (a zero divisor) out.
#pragma once

#include <stdexcept>
#include <string>

namespace latentchess::core {

struct SearchParameters {
  // Reverse futility pruning: prune when eval - margin * (depth - improving) >= beta.
  int reverse_futility_margin = 85;
  // Reverse futility pruning applies at depths up to this.
  int reverse_futility_depth = 6;
  // Reverse futility pruning returns the midpoint of eval and beta (1), or eval (0): a bound
  // nearer beta, as Stockfish's, where eval alone overstates how far the node fails high.
  int reverse_futility_blend = 0;
  // Null move: the reduction's constant part (3 + depth / divisor + eval term).
  int null_move_base_reduction = 3;
  // Null move: one more ply of reduction per this many plies of depth.
  int null_move_depth_divisor = 4;
  // Null move: one more ply of reduction per this many centipawns of eval above beta ...
  int null_move_eval_divisor = 200;
  // ... up to this many plies.
  int null_move_eval_max_reduction = 3;
  // Internal iterative reduction: a PV or expected cut node without a table move is searched
  // one ply shallower from this depth on.
  int iir_depth = 6;
  // Futility pruning of quiet moves: eval + base + per_depth * depth <= alpha.
  int futility_base = 90;
  // Futility pruning: margin per ply of depth.
  int futility_per_depth = 100;
  // Futility pruning of captures: eval + the victim's value + this + futility_per_depth * the
  // LMR depth <= alpha prunes a capture that does not give check (0: off).
  int capture_futility_margin = 0;
  // Futility (and SEE) pruning apply at depths up to this.
  int futility_depth = 6;
  // Late-move pruning: quiets beyond (base + depth^2) (halved when not improving) are pruned.
  int late_move_pruning_base = 3;
  // SEE pruning of captures: prune below -per_depth * depth.
  int see_tactical_per_depth = 100;
  // SEE pruning of quiet moves: prune below -per_depth_squared * depth^2.
  int see_quiet_per_depth_squared = 25;
  // Late-move reductions: base of the table, in hundredths (0.75 + ln d * ln n / divisor).
  int lmr_base_percent = 75;
  // Late-move reductions: the table's divisor, in hundredths (2.25).
  int lmr_divisor_percent = 225;
  // Late-move reductions: one ply less (more) per this much history score of a quiet move.
  int lmr_history_divisor = 10000;
  // Late-move reductions at the root too (1), or every root move to the full depth (0). On since
  // its SPRT together with the capture history below (+31 +- 18 at 20,000 nodes).
  int lmr_root = 1;
  // Late-move reductions: this many plies more at an expected cut node (a null-window child of
  // a move that is not its node's first).
  int lmr_cut_node = 1;
  // Late-move reductions: this many plies more when the table move is a capture or promotion
  // (the node's best line is tactical, so the quiet alternatives rarely matter; 0: off).
  int lmr_table_capture = 1;  // on since one SPRT with table_cut_history, quiescence_table_eval
  // Late-move reductions: this many plies less at a node that is or was on the PV (a PV node, or
  // one whose table entry was stored from one), unless it is a PV node likely to fail low (its
  // table move's entry is an upper bound at this depth or deeper) (0: off).
  int lmr_table_pv = 0;
  // Late-move reductions: this many plies more when the next ply's nodes under this node's
  // parent have already cut off more than 3 times (0: off).
  int lmr_cutoff_count = 0;
  // Late-move reductions: when a reduced move beats alpha, the full-depth re-search goes one ply
  // deeper if it beat alpha by this many centipawns plus 11 per ply of reduction, one ply
  // shallower if it stayed within the depth's centipawns of the best so far; a quiet move's
  // continuation histories learn whether the re-search beat alpha (0: off, the re-search at the
  // unreduced depth and no history update).
  int lmr_deeper_margin = 0;
  // Futility and quiet SEE pruning measure their margins at the depth late-move reductions would
  // search the move to (1), or at the node's depth (0).
  int futility_lmr_depth = 1;  // on since one SPRT with the two others of bundle5 (+41 +- 23)
  // A node where every move failed low rewards the quiet move that led to it in its continuation
  // histories (twice the depth's bonus from depth 6 on) (1), or not (0).
  int fail_low_prior_bonus = 1;  // on since one SPRT with the two others of bundle5 (+41 +- 23)
  // The butterfly history also by whether the opponent attacks the move's from and to squares
  // (1), or by side, from and to square alone (0).
  int threat_history = 1;  // on since one SPRT with the two others of bundle5 (+41 +- 23)
  // Quiet moves' order: points per value class (minor 1, rook 2, queen 3) for a piece moved out
  // of attack by a cheaper piece, as many off for one moved into such an attack (0: off). The
  // histories span +-16,384 each. 8000 since its SPRT (+31 +- 18 at 20,000 nodes).
  int threat_order = 8000;
  // Quiet moves' order: points for a move that gives check directly (0: off).
  int check_order = 0;
  // Quiet moves are ordered, and rewarded, by the continuation histories of the moves 4 and 6
  // plies back as well (1), or of the moves 1 and 2 plies back alone (0).
  int continuation_far = 0;
  // Check extension: a node in check is searched this many plies deeper (0: off).
  int check_extension = 1;
  // Singular extension: the bound is the table score minus this many centipawns per ply.
  int singular_margin_per_depth = 2;
  // Singular extension: from this depth on.
  int singular_min_depth = 7;
  // Singular extension: two plies instead of one when every other move fails this many
  // centipawns below the bound (0: off), outside PV nodes, at most kMaxDoubleExtensions times
  // on a line.
  int singular_double_margin = 0;
  // Singular extension: when the others do not all fail low but the table's score still holds
  // beta, the table move is searched this many plies shallower (0: off).
  int singular_negative_extension = 1;
  // ProbCut: at depths from 5 on, a capture whose reduced search (depth - 4) holds beta plus this
  // many centipawns cuts the node off (0: off; 200 since its SPRT, +19 +- 13 at 20,000 nodes).
  int probcut_margin = 200;
  // Razoring: at depths up to 3, when eval + this many centipawns per ply stays below alpha, a
  // quiescence search decides the node if it confirms the fail-low (0: off).
  int razoring_margin = 0;
  // A table cut-off by a quiet table move (lower bound at or above beta) rewards that move in
  // the quiet histories, killers and counter-move as a searched cut-off would (1), or not (0).
  int table_cut_history = 1;  // on: the SPRT of lmr_table_capture
  // A quiet move is rewarded in its side's butterfly history by this many points per centipawn
  // by which it raised that side's static evaluation (penalised per centipawn it lowered it),
  // within +-history_bonus_max, when the reply's node evaluates (0: off).
  int eval_history = 0;
  // History bonus of a cut-off: per_depth_squared * depth^2 ...
  int history_bonus_per_depth_squared = 16;
  // ... plus per_depth * depth (0: off) ...
  int history_bonus_per_depth = 0;
  // ... up to this.
  int history_bonus_max = 1600;
  // Quiescence delta pruning: a capture that cannot lift eval + victim + margin to alpha.
  int quiescence_delta_margin = 200;
  // Quiescence: stand pat on the table's score where its bound points past the static
  // evaluation, as the main search's pruning does (1), or on the static evaluation alone (0).
  int quiescence_table_eval = 1;  // on: the SPRT of lmr_table_capture
  // Quiescence: a stand pat at or above beta returns the midpoint of its score and beta (1), or
  // the score (0), as Stockfish's quiescence search does outside mate scores.
  int quiescence_stand_pat_blend = 0;
  // Capture history: captures' order moves by history / this divisor (0: off, captures by
  // victim and attacker alone). The victim term spans 64 (pawn) to 576 (queen) and the history
  // +-16,384, so 16 or 64 let the history override the victim; about 512 keeps it a tie-break
  // among captures of similar victims, the weight Stockfish gives it. 512 since its SPRT together
  // with lmr_root (+31 +- 18 at 20,000 nodes).
  int capture_history_divisor = 512;
  // Static evaluations shrink towards a draw as the fifty-move counter runs: times
  // (200 - halfmove clock) / 200 (1), or not (0).
  int fifty_move_scaling = 0;
  // Correction history: the share of its correction added to static evaluations, in hundredths
  // (0: off).
  int correction_history_percent = 0;
  // Aspiration window: the first half-width around the last score, in centipawns.
  int aspiration_delta = 20;
  // Aspiration window: each fail high of an iteration searches the root one ply shallower
  // (never below half the iteration's depth) until the window holds the score (1), or always at
  // the iteration's depth (0), as Stockfish does.
  int aspiration_fail_high_depth = 0;
  // Time: iteration time factor when the best move just changed, in hundredths (1.5).
  int time_unstable_percent = 150;
  // Time: factor when the score fell by more than time_score_drop centipawns (1.4).
  int time_score_drop_percent = 140;
  // Time: the fall in score (centipawns) that asks for more time.
  int time_score_drop = 30;
  // Time: the moves a sudden-death clock is planned over (timeman.cpp; movestogo caps it).
  int time_moves_to_go = 20;
  // Time: no new iteration starts past this share of the move's budget, in hundredths (before
  // the stability factors above scale it).
  int time_iteration_percent = 70;
  // Time: scale the iteration share by (1.5 - the best move's share of the nodes) times this,
  // in hundredths (0: off). A best move that took most of the tree needs less time.
  int time_node_share_percent = 0;
  // Time: the plan's share of a sudden-death clock at the game's start, in hundredths (100:
  // off); the extra fades linearly to nothing by game ply time_opening_plies (timeman.cpp), so
  // the first moves out of book, where most games turn, get several times the even share.
  int time_opening_percent = 100;
  // Time: the game ply by which time_opening_percent's extra has faded out.
  int time_opening_plies = 60;

  // Throws std::invalid_argument naming the first field out of its range.
  void validate() const {
    const auto at_least = [](const char* name, int value, int low) {
      if (value < low) {
        throw std::invalid_argument(std::string("search parameter ") + name + " must be at least " +
                                    std::to_string(low) + ", got " + std::to_string(value));
      }
    };
    const auto at_most = [](const char* name, int value, int high) {
      if (value > high) {
        throw std::invalid_argument(std::string("search parameter ") + name + " must be at most " +
                                    std::to_string(high) + ", got " + std::to_string(value));
      }
    };
    at_least("null_move_depth_divisor", null_move_depth_divisor, 1);
    at_least("null_move_eval_divisor", null_move_eval_divisor, 1);
    at_least("lmr_divisor_percent", lmr_divisor_percent, 1);
    at_least("lmr_history_divisor", lmr_history_divisor, 1);
    at_least("lmr_root", lmr_root, 0);
    at_most("lmr_root", lmr_root, 1);
    at_least("lmr_cut_node", lmr_cut_node, 0);
    at_most("lmr_cut_node", lmr_cut_node, 3);
    at_least("lmr_table_capture", lmr_table_capture, 0);
    at_most("lmr_table_capture", lmr_table_capture, 2);
    at_least("lmr_table_pv", lmr_table_pv, 0);
    at_most("lmr_table_pv", lmr_table_pv, 3);
    at_least("lmr_cutoff_count", lmr_cutoff_count, 0);
    at_most("lmr_cutoff_count", lmr_cutoff_count, 2);
    at_least("lmr_deeper_margin", lmr_deeper_margin, 0);
    at_least("futility_lmr_depth", futility_lmr_depth, 0);
    at_most("futility_lmr_depth", futility_lmr_depth, 1);
    at_least("fail_low_prior_bonus", fail_low_prior_bonus, 0);
    at_most("fail_low_prior_bonus", fail_low_prior_bonus, 1);
    at_least("threat_history", threat_history, 0);
    at_most("threat_history", threat_history, 1);
    at_least("continuation_far", continuation_far, 0);
    at_most("continuation_far", continuation_far, 1);
    at_least("capture_futility_margin", capture_futility_margin, 0);
    at_least("threat_order", threat_order, 0);
    at_least("check_order", check_order, 0);
    at_least("late_move_pruning_base", late_move_pruning_base, 0);
    at_least("aspiration_delta", aspiration_delta, 1);
    at_least("aspiration_fail_high_depth", aspiration_fail_high_depth, 0);
    at_most("aspiration_fail_high_depth", aspiration_fail_high_depth, 1);
    at_least("reverse_futility_blend", reverse_futility_blend, 0);
    at_most("reverse_futility_blend", reverse_futility_blend, 1);
    at_least("iir_depth", iir_depth, 0);
    at_least("check_extension", check_extension, 0);
    at_most("check_extension", check_extension, 1);
    at_least("singular_min_depth", singular_min_depth, 1);
    at_least("singular_double_margin", singular_double_margin, 0);
    at_least("singular_negative_extension", singular_negative_extension, 0);
    at_most("singular_negative_extension", singular_negative_extension, 2);
    at_least("probcut_margin", probcut_margin, 0);
    at_least("razoring_margin", razoring_margin, 0);
    at_least("table_cut_history", table_cut_history, 0);
    at_most("table_cut_history", table_cut_history, 1);
    at_least("eval_history", eval_history, 0);
    at_least("history_bonus_per_depth_squared", history_bonus_per_depth_squared, 0);
    at_least("history_bonus_per_depth", history_bonus_per_depth, 0);
    at_least("history_bonus_max", history_bonus_max, 0);
    at_most("history_bonus_max", history_bonus_max, 16384);  // the histories' gravity bound
    at_least("time_unstable_percent", time_unstable_percent, 1);
    at_least("time_score_drop_percent", time_score_drop_percent, 1);
    at_least("time_moves_to_go", time_moves_to_go, 1);
    at_least("capture_history_divisor", capture_history_divisor, 0);
    at_least("quiescence_table_eval", quiescence_table_eval, 0);
    at_most("quiescence_table_eval", quiescence_table_eval, 1);
    at_least("quiescence_stand_pat_blend", quiescence_stand_pat_blend, 0);
    at_most("quiescence_stand_pat_blend", quiescence_stand_pat_blend, 1);
    at_least("fifty_move_scaling", fifty_move_scaling, 0);
    at_most("fifty_move_scaling", fifty_move_scaling, 1);
    at_least("correction_history_percent", correction_history_percent, 0);
    at_most("correction_history_percent", correction_history_percent, 400);
    at_least("time_iteration_percent", time_iteration_percent, 1);
    at_most("time_iteration_percent", time_iteration_percent, 100);
    at_least("time_node_share_percent", time_node_share_percent, 0);
    at_most("time_node_share_percent", time_node_share_percent, 300);
    at_least("time_opening_percent", time_opening_percent, 100);
    at_most("time_opening_percent", time_opening_percent, 600);
    at_least("time_opening_plies", time_opening_plies, 1);
    at_most("time_opening_plies", time_opening_plies, 1000);
  }
};

}  // namespace latentchess::core
