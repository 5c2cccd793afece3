// FEN text: splitting and validating the six fields exactly as latentchess.encoding's tokenizer
// does (same refusals, same problem texts), before any board is built.
//
// Invariants:
//  * split_fen() either returns six validated fields or throws FenError; it never builds a board,
//    so the tokenizer (encoding.cpp) and Position::from_fen share one set of rules.
#pragma once

#include <string>
#include <string_view>

namespace latentchess::core {

struct FenFields {
    std::string_view placement, side, castling, en_passant, halfmove, fullmove;
    long long halfmove_value = 0;  // clamped to 999'999'999 (the tokenizer shows at most 999)
    long long fullmove_value = 1;
};

// `chess960_castling`: the castling field may also name rooks by file (X-FEN, Shredder-FEN):
// up to two of KQA-H then up to two of kqa-h, as python-chess accepts.
FenFields split_fen(std::string_view fen, bool chess960_castling = false);

// Python's repr() of a short ASCII string (for error messages that match the Python ones).
std::string python_repr(std::string_view text);

}  // namespace latentchess::core
