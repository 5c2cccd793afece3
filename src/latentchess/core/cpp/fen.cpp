// FEN field validation (see fen.h).
#include "fen.h"

#include <vector>

#include "position.h"

namespace latentchess::core {

namespace {

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

void validate_placement(std::string_view fen, std::string_view placement) {
    std::vector<std::string_view> ranks;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= placement.size(); ++i) {
        if (i == placement.size() || placement[i] == '/') {
            ranks.push_back(placement.substr(start, i - start));
            start = i + 1;
        }
    }
    if (ranks.size() != 8)
        throw FenError(std::string(fen), "expected 8 ranks separated by '/', got " +
                                             std::to_string(ranks.size()));
    for (int index = 0; index < 8; ++index) {
        const int rank_number = 8 - index;
        const std::string_view rank = ranks[index];
        int width = 0;
        bool previous_digit = false;
        for (const char c : rank) {
            if (c >= '1' && c <= '8') {
                if (previous_digit)
                    throw FenError(std::string(fen), "rank " + std::to_string(rank_number) + " " +
                                                         python_repr(rank) + " has adjacent digits");
                width += c - '0';
                previous_digit = true;
            } else if (std::string_view("pnbrqkPNBRQK").find(c) != std::string_view::npos) {
                width += 1;
                previous_digit = false;
            } else {
                throw FenError(std::string(fen), "bad piece letter " +
                                                     python_repr(std::string_view(&c, 1)) +
                                                     " in rank " + std::to_string(rank_number));
            }
        }
        if (width != 8)
            throw FenError(std::string(fen), "rank " + std::to_string(rank_number) + " " +
                                                 python_repr(rank) + " covers " +
                                                 std::to_string(width) + " squares, not 8");
    }
}

long long clock_value(std::string_view fen, const char* name, std::string_view value,
                      int minimum) {
    bool digits = !value.empty();
    long long number = 0;
    for (const char c : value) {
        if (c < '0' || c > '9') {
            digits = false;
            break;
        }
        number = number * 10 + (c - '0');
        if (number > 999'999'999) number = 999'999'999;
    }
    if (!digits || number < minimum)
        throw FenError(std::string(fen), std::string(name) + " " + python_repr(value) +
                                             " is not an integer >= " + std::to_string(minimum));
    return number;
}

}  // namespace

std::string python_repr(std::string_view text) {
    const bool has_single = text.find('\'') != std::string_view::npos;
    const bool has_double = text.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    static constexpr char Hex[] = "0123456789abcdef";
    std::string out(1, quote);
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\\' || c == quote) {
            out += '\\';
            out += c;
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (byte < 0x20 || byte == 0x7f) {
            out += "\\x";
            out += Hex[byte >> 4];
            out += Hex[byte & 15];
        } else {
            out += c;
        }
    }
    out += quote;
    return out;
}

FenFields split_fen(std::string_view fen, bool chess960_castling) {
    std::string_view fields[6];
    std::size_t count = 0;
    std::size_t i = 0;
    while (i < fen.size()) {
        while (i < fen.size() && is_space(fen[i])) ++i;
        if (i == fen.size()) break;
        const std::size_t start = i;
        while (i < fen.size() && !is_space(fen[i])) ++i;
        if (count < 6) fields[count] = fen.substr(start, i - start);
        ++count;
    }
    if (count != 6)
        throw FenError(std::string(fen),
                       "expected 6 space-separated fields, got " + std::to_string(count));
    FenFields result{fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]};
    validate_placement(fen, result.placement);
    if (result.side != "w" && result.side != "b")
        throw FenError(std::string(fen),
                       "side to move must be 'w' or 'b', got " + python_repr(result.side));
    if (chess960_castling && result.castling != "-") {
        // python-chess's CASTLING_REGEX: ^(?:-|[KQABCDEFGH]{0,2}[kqabcdefgh]{0,2})$
        const std::string_view white = "KQABCDEFGH", black = "kqabcdefgh";
        std::size_t i = 0, whites = 0, blacks = 0;
        const std::string_view field = result.castling;
        while (i < field.size() && white.find(field[i]) != std::string_view::npos) ++i, ++whites;
        while (i < field.size() && black.find(field[i]) != std::string_view::npos) ++i, ++blacks;
        if (i != field.size() || whites > 2 || blacks > 2)
            throw FenError(std::string(fen), "castling field " + python_repr(result.castling) +
                                                 " is not '-', X-FEN or Shredder-FEN castling");
    } else if (result.castling != "-") {
        bool ok = result.castling.size() <= 4;
        std::size_t last = 0;
        for (const char c : result.castling) {
            const std::size_t position = std::string_view("KQkq").find(c);
            if (position == std::string_view::npos || position + 1 <= last) {
                ok = false;
                break;
            }
            last = position + 1;
        }
        if (!ok)
            throw FenError(std::string(fen), "castling field " + python_repr(result.castling) +
                                                 " is not '-' or KQkq in order");
    }
    if (result.en_passant != "-" &&
        (result.en_passant.size() != 2 || result.en_passant[0] < 'a' ||
         result.en_passant[0] > 'h' || (result.en_passant[1] != '3' && result.en_passant[1] != '6')))
        throw FenError(std::string(fen), "en-passant field " + python_repr(result.en_passant) +
                                             " is not '-' or a3..h6");
    result.halfmove_value = clock_value(fen, "halfmove clock", result.halfmove, 0);
    result.fullmove_value = clock_value(fen, "fullmove number", result.fullmove, 1);
    return result;
}

}  // namespace latentchess::core
