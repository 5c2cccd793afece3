// Python bindings of the native core: module latentchess.core._native.
//
// Invariants:
//  * Squares, piece types and move bits cross the boundary as python-chess numbers; colours as
//    0 = White, 1 = Black (the Python wrapper converts to python-chess's True/False).
//  * FenError becomes latentchess.errors.InvalidFenError(fen, problem); MoveError becomes
//    chess.IllegalMoveError. Long calls (perft, expand, batched tokens) release the GIL;
//    a Position itself is not thread-safe (one thread per Position).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "bitboard.h"
#include "encoding.h"
#include "movegen.h"
#include "perft.h"
#include "position.h"

namespace py = pybind11;
using namespace latentchess::core;

namespace {

py::list move_list_to_python(const MoveList& moves) {
    py::list out(moves.size);
    for (int i = 0; i < moves.size; ++i) out[i] = py::int_(moves[i].bits());
    return out;
}

Move checked_move(int bits) {
    if (bits < 0 || bits > 0xFFFF) throw MoveError("move bits out of range: " + std::to_string(bits));
    return Move::from_bits(static_cast<std::uint16_t>(bits));
}

template <typename T>
py::array_t<T> to_array(const std::vector<T>& values) {
    py::array_t<T> array(static_cast<py::ssize_t>(values.size()));
    if (!values.empty()) std::memcpy(array.mutable_data(), values.data(), values.size() * sizeof(T));
    return array;
}

void bind_board(py::module_& m) {
    py::class_<Position>(m, "Position", "A chess position with an undo stack (see position.h).")
        .def(py::init([](const std::string& fen, bool chess960) { return Position::from_fen(fen, chess960); }),
             py::arg("fen"), py::arg("chess960") = false)
        .def("copy", [](const Position& p) { return Position(p); })
        .def("fen", &Position::fen, py::arg("shredder") = false)
        .def("chess960", &Position::chess960)
        .def("castling_rook_square", [](const Position& p, int index) { return p.castling_rook_square(index & 3); })
        .def("side_to_move", [](const Position& p) { return static_cast<int>(p.side_to_move()); })
        .def("pieces",
             [](const Position& p, int color, int type) {
                 if (color < 0 || color > 1 || type < 1 || type > 6)
                     throw py::value_error("color must be 0/1 and piece type 1..6");
                 return p.pieces(Color(color), PieceType(type));
             })
        .def("occupied", &Position::occupied)
        .def("occupied_by", [](const Position& p, int color) { return p.pieces(Color(color & 1)); })
        .def("piece_type_on", [](const Position& p, int sq) { return static_cast<int>(p.piece_type_on(sq & 63)); })
        .def("color_on", [](const Position& p, int sq) { return static_cast<int>(p.color_on(sq & 63)); })
        .def("king_square", [](const Position& p, int color) { return p.king_square(Color(color & 1)); })
        .def("castling_rights", &Position::castling_rights)
        .def("en_passant_square", &Position::en_passant_square)
        .def("halfmove_clock", &Position::halfmove_clock)
        .def("fullmove_number", &Position::fullmove_number)
        .def("ply_count", &Position::ply_count)
        .def("key", &Position::key)
        .def("in_check", &Position::in_check)
        .def("checkers", &Position::checkers)
        .def("is_capture", [](const Position& p, int bits) { return p.is_capture(checked_move(bits)); })
        .def("is_pseudo_legal", [](const Position& p, int bits) { return p.is_pseudo_legal(checked_move(bits)); })
        .def("is_legal", [](const Position& p, int bits) { return p.is_legal(checked_move(bits)); })
        .def("legal_moves",
             [](const Position& p) {
                 MoveList moves;
                 generate_legal_moves(p, moves);
                 return move_list_to_python(moves);
             })
        .def("legal_captures",
             [](const Position& p) {
                 MoveList moves;
                 generate_legal_captures(p, moves);
                 return move_list_to_python(moves);
             })
        .def("legal_quiets",
             [](const Position& p) {
                 MoveList moves;
                 generate_legal_quiets(p, moves);
                 return move_list_to_python(moves);
             })
        .def("has_legal_move", [](const Position& p) { return has_legal_move(p); })
        .def("push",
             [](Position& p, int bits) {
                 const Move move = checked_move(bits);
                 if (!p.is_legal(move))
                     throw MoveError("illegal move " + move.to_uci() + " in '" + p.fen() + "'");
                 p.do_move(move);
             })
        .def("push_uci", [](Position& p, const std::string& text) { p.do_move(p.parse_uci(text)); })
        .def("parse_uci", [](const Position& p, const std::string& text) { return p.parse_uci(text).bits(); })
        .def("pop",
             [](Position& p) {
                 if (p.ply_count() == 0) throw py::index_error("pop from an empty move stack");
                 const Move move = p.state().move;
                 if (move.is_none()) p.undo_null_move(); else p.undo_move();
                 return move.bits();
             })
        .def("push_null",
             [](Position& p) {
                 if (p.in_check()) throw MoveError("null move while in check in '" + p.fen() + "'");
                 p.do_null_move();
             })
        .def("is_fifty_move_draw", &Position::is_fifty_move_draw)
        .def("is_insufficient_material", &Position::is_insufficient_material)
        .def("has_insufficient_material",
             [](const Position& p, int color) { return p.has_insufficient_material(Color(color & 1)); })
        .def("is_repetition", &Position::is_repetition, py::arg("times") = 2)
        .def("repetition_count", &Position::repetition_count)
        .def("set_history_keys", &Position::set_history_keys, py::arg("keys"))
        .def("status", [](const Position& p) { return static_cast<int>(position_status(p)); })
        .def("perft",
             [](Position& p, int depth) {
                 py::gil_scoped_release release;
                 return perft(p, depth);
             },
             py::arg("depth"))
        .def("perft_divide",
             [](Position& p, int depth) {
                 std::vector<std::pair<Move, std::uint64_t>> counts;
                 {
                     py::gil_scoped_release release;
                     counts = perft_divide(p, depth);
                 }
                 std::vector<std::pair<std::string, std::uint64_t>> out;
                 for (const auto& [move, nodes] : counts) out.emplace_back(move.to_uci(), nodes);
                 return out;
             },
             py::arg("depth"))
        .def("tokens",
             [](const Position& p) {
                 py::array_t<std::uint8_t> out(SequenceLength);
                 write_tokens(p, out.mutable_data());
                 return out;
             })
        .def("expand",
             [](Position& p, bool with_tokens) {
                 Expansion e;
                 {
                     py::gil_scoped_release release;
                     e = expand(p, with_tokens);
                 }
                 std::vector<std::uint16_t> moves;
                 moves.reserve(e.moves.size());
                 for (const Move move : e.moves) moves.push_back(move.bits());
                 std::vector<std::uint8_t> status;
                 for (const Status s : e.status) status.push_back(static_cast<std::uint8_t>(s));
                 py::array_t<std::uint8_t> tokens(
                     {static_cast<py::ssize_t>(e.moves.size()), static_cast<py::ssize_t>(with_tokens ? SequenceLength : 0)});
                 if (!e.tokens.empty()) std::memcpy(tokens.mutable_data(), e.tokens.data(), e.tokens.size());
                 return py::make_tuple(to_array(moves), to_array(e.keys), to_array(status),
                                       to_array(e.in_check), to_array(e.halfmove),
                                       to_array(e.repetitions), tokens);
             },
             py::arg("with_tokens") = true);

    m.def("tokenize_fens",
          [](const std::vector<std::string>& fens) {
              py::array_t<std::uint8_t> out({static_cast<py::ssize_t>(fens.size()), static_cast<py::ssize_t>(SequenceLength)});
              std::uint8_t* data = out.mutable_data();
              {
                  py::gil_scoped_release release;
                  for (std::size_t i = 0; i < fens.size(); ++i) tokenize_fen(fens[i], data + i * SequenceLength);
              }
              return out;
          },
          py::arg("fens"), "Tokenize FEN strings into an (N, 77) uint8 array, as encoding.tokenize_batch.");
    m.def("board_tokens",
          [](const std::vector<std::string>& fens) {
              py::array_t<std::uint8_t> out({static_cast<py::ssize_t>(fens.size()), static_cast<py::ssize_t>(SequenceLength)});
              std::uint8_t* data = out.mutable_data();
              {
                  py::gil_scoped_release release;
                  for (std::size_t i = 0; i < fens.size(); ++i)
                      write_tokens(Position::from_fen(fens[i]), data + i * SequenceLength);
              }
              return out;
          },
          py::arg("fens"), "Tokens of the boards the FENs describe, as fastboard.tokenize_boards.");
    m.def("move_to_uci", [](int bits) { return checked_move(bits).to_uci(); });
    m.def("attacks_from_bishop", [](int sq, Bitboard occ) { return attacks_from_bishop(sq & 63, occ); });
    m.def("attacks_from_rook", [](int sq, Bitboard occ) { return attacks_from_rook(sq & 63, occ); });
}

void register_errors() {
    py::register_exception_translator([](std::exception_ptr pointer) {
        try {
            if (pointer) std::rethrow_exception(pointer);
        } catch (const FenError& error) {
            py::object type = py::module_::import("latentchess.errors").attr("InvalidFenError");
            py::object instance = type(error.fen, error.problem);
            PyErr_SetObject(type.ptr(), instance.ptr());
        } catch (const MoveError& error) {
            py::object type = py::module_::import("chess").attr("IllegalMoveError");
            PyErr_SetString(type.ptr(), error.what());
        }
    });
}

}  // namespace

// Defined in search_bindings.cpp (search helper).
namespace latentchess::core {
void bind_search(py::module_& module);
void bind_nnue(py::module_& module);  // nnue_bindings.cpp (nnue helper)
void bind_latent(py::module_& module);  // latent_bindings.cpp (sparse encoder, latent search)
}  // namespace latentchess::core

PYBIND11_MODULE(_native, m) {
    m.doc() = "latentchess native core: bitboards, legal move generation, perft, tokens.";
    m.attr("SEQUENCE_LENGTH") = SequenceLength;
    register_errors();
    bind_board(m);
    // ---- search section (search helper) goes below this line ----
    latentchess::core::bind_search(m);
    // ---- NNUE section (nnue helper) ----
    latentchess::core::bind_nnue(m);
    latentchess::core::bind_latent(m);  // sparse encoder and latent search
}
