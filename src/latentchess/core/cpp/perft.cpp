// Perft (see perft.h).
#include "perft.h"

#include "movegen.h"

namespace latentchess::core {

std::uint64_t perft(Position& position, int depth) {
    if (depth <= 0) return 1;
    MoveList moves;
    generate_legal_moves(position, moves);
    if (depth == 1) return static_cast<std::uint64_t>(moves.size);
    std::uint64_t nodes = 0;
    for (const Move move : moves) {
        position.do_move(move);
        nodes += perft(position, depth - 1);
        position.undo_move();
    }
    return nodes;
}

std::vector<std::pair<Move, std::uint64_t>> perft_divide(Position& position, int depth) {
    std::vector<std::pair<Move, std::uint64_t>> counts;
    if (depth <= 0) return counts;
    MoveList moves;
    generate_legal_moves(position, moves);
    for (const Move move : moves) {
        position.do_move(move);
        counts.emplace_back(move, perft(position, depth - 1));
        position.undo_move();
    }
    return counts;
}

}  // namespace latentchess::core
