// Token encoding and child expansion (see encoding.h).
#include "encoding.h"

#include <algorithm>
#include <array>

#include "fen.h"
#include "movegen.h"

namespace latentchess::core {

namespace {

constexpr std::string_view Vocabulary = "0123456789abcdefghpnrkqPBNRQKw.";

constexpr std::array<std::uint8_t, 256> make_token_table() {
    std::array<std::uint8_t, 256> table{};
    for (auto& entry : table) entry = 255;
    for (std::size_t i = 0; i < Vocabulary.size(); ++i)
        table[static_cast<unsigned char>(Vocabulary[i])] = static_cast<std::uint8_t>(i);
    return table;
}
constexpr std::array<std::uint8_t, 256> TokenOf = make_token_table();
constexpr std::uint8_t Dot = TokenOf['.'];

// Token of the piece code (type | color << 3); 0 (empty) is '.'.
constexpr std::array<std::uint8_t, 16> make_piece_tokens() {
    std::array<std::uint8_t, 16> table{};
    constexpr std::string_view letters = ".PNBRQK..pnbrqk.";
    for (std::size_t i = 0; i < 16; ++i) table[i] = TokenOf[static_cast<unsigned char>(letters[i])];
    return table;
}
constexpr std::array<std::uint8_t, 16> PieceTokens = make_piece_tokens();

// Write `value` (clamped to 999) left-aligned into 3 tokens padded with '.'.
void write_clock(long long value, std::uint8_t* out) {
    const int clamped = static_cast<int>(std::min<long long>(value, 999));
    char digits[4] = {'.', '.', '.', '\0'};
    const std::string text = std::to_string(clamped);
    for (std::size_t i = 0; i < text.size(); ++i) digits[i] = text[i];
    for (int i = 0; i < 3; ++i) out[i] = TokenOf[static_cast<unsigned char>(digits[i])];
}

}  // namespace

void write_tokens(const Position& position, std::uint8_t* out) {
    out[0] = TokenOf[position.side_to_move() == White ? 'w' : 'b'];
    for (int k = 0; k < 64; ++k) {
        const Square square = k ^ 56;
        const Piece piece = position.piece_on(square);
        out[1 + k] = PieceTokens[piece.type | (piece.color << 3)];
    }
    int next = 65;
    const int rights = position.castling_rights();
    for (int i = 0; i < 4; ++i)
        if (rights & (1 << i)) out[next++] = TokenOf[static_cast<unsigned char>("KQkq"[i])];
    while (next < 69) out[next++] = Dot;
    const Square ep = position.en_passant_square();
    if (ep == NoSquare) {
        out[69] = out[70] = Dot;
    } else {
        out[69] = TokenOf['a' + file_of(ep)];
        out[70] = TokenOf['1' + rank_of(ep)];
    }
    write_clock(position.halfmove_clock(), out + 71);
    write_clock(position.fullmove_number(), out + 74);
}

void tokenize_fen(std::string_view fen, std::uint8_t* out) {
    const FenFields fields = split_fen(fen);
    out[0] = TokenOf[static_cast<unsigned char>(fields.side[0])];
    int next = 1;
    for (const char c : fields.placement) {
        if (c == '/') continue;
        if (c >= '1' && c <= '8') {
            for (int i = 0; i < c - '0'; ++i) out[next++] = Dot;
        } else {
            out[next++] = TokenOf[static_cast<unsigned char>(c)];
        }
    }
    next = 65;
    if (fields.castling != "-")
        for (const char c : fields.castling) out[next++] = TokenOf[static_cast<unsigned char>(c)];
    while (next < 69) out[next++] = Dot;
    if (fields.en_passant != "-") {
        out[69] = TokenOf[static_cast<unsigned char>(fields.en_passant[0])];
        out[70] = TokenOf[static_cast<unsigned char>(fields.en_passant[1])];
    } else {
        out[69] = out[70] = Dot;
    }
    write_clock(fields.halfmove_value, out + 71);
    write_clock(fields.fullmove_value, out + 74);
}

Status position_status(const Position& position) {
    if (!has_legal_move(position)) return position.in_check() ? Status::Mated : Status::Drawn;
    if (position.is_insufficient_material()) return Status::Drawn;
    return Status::Normal;
}

Expansion expand(Position& position, bool with_tokens) {
    MoveList moves;
    generate_legal_moves(position, moves);
    Expansion result;
    const auto count = static_cast<std::size_t>(moves.size);
    result.moves.assign(moves.begin(), moves.end());
    result.keys.resize(count);
    result.status.resize(count);
    result.in_check.resize(count);
    result.halfmove.resize(count);
    result.repetitions.resize(count);
    if (with_tokens) result.tokens.resize(count * SequenceLength);
    for (std::size_t i = 0; i < count; ++i) {
        position.do_move(moves[static_cast<int>(i)]);
        result.keys[i] = position.key();
        result.status[i] = position_status(position);
        result.in_check[i] = position.in_check() ? 1 : 0;
        result.halfmove[i] = position.halfmove_clock();
        result.repetitions[i] = position.repetition_count();
        if (with_tokens) write_tokens(position, result.tokens.data() + i * SequenceLength);
        position.undo_move();
    }
    return result;
}

}  // namespace latentchess::core
