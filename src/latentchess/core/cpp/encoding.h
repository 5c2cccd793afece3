// The 77-token position encoding, equal to latentchess.encoding.tokenize (ChessBench FEN
// tokenizer), and the one-call child expansion the latent search needs per node.
//
// Invariants:
//  * Token layout (see src/latentchess/encoding.py): 0 side to move; 1-64 the squares a8..h8,
//    a7..h7, ..., a1..h1; 65-68 castling letters padded with '.'; 69-70 en-passant square or
//    '..'; 71-73 halfmove clock and 74-76 fullmove number, left-aligned, clamped to 999.
//  * write_tokens(position) equals tokenize(board.fen()) for the same board: castling rights
//    clean and the en-passant square only when a legal en-passant capture exists.
//  * tokenize_fen(text) equals tokenize(text) on every FEN, including its refusals.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "position.h"

namespace latentchess::core {

constexpr int SequenceLength = 77;

// Terminal status of a position by itself (no history), as the latent search caches it.
enum class Status : std::uint8_t { Normal = 0, Mated = 1, Drawn = 2 };

void write_tokens(const Position& position, std::uint8_t* out);
void tokenize_fen(std::string_view fen, std::uint8_t* out);

// Checkmated (no legal move, in check), drawn (stalemate or insufficient material) or normal.
Status position_status(const Position& position);

// Everything about the children of a position, in legal-move generation order.
struct Expansion {
    std::vector<Move> moves;
    std::vector<std::uint64_t> keys;       // Polyglot keys of the children
    std::vector<Status> status;            // each child's Status
    std::vector<std::uint8_t> in_check;    // 1 when the child's side to move is in check
    std::vector<std::int32_t> halfmove;    // each child's halfmove clock
    std::vector<std::int32_t> repetitions; // earlier occurrences of each child (with history)
    std::vector<std::uint8_t> tokens;      // moves.size() x 77 tokens
};

// Expands `position` (restored on return). Tokens are written only when `with_tokens`.
Expansion expand(Position& position, bool with_tokens = true);

}  // namespace latentchess::core
