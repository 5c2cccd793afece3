// A small SVG chess board: click or drag moves, legal-move hints, promotion choice, flip,
// last-move and check marks, and an optional heat map (square -> value) drawn under the pieces.
// Legality comes from the server (a list of UCI moves); the board never decides it alone.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const FILES = "abcdefgh";
const SIZE = 60;

function svg(tag, attrs, parent) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

function parsePlacement(fen) {
  const pieces = {};
  const ranks = fen.split(" ")[0].split("/");
  ranks.forEach((row, index) => {
    let file = 0;
    for (const ch of row) {
      if (/\d/.test(ch)) file += Number(ch);
      else {
        pieces[FILES[file] + (8 - index)] = ch;
        file += 1;
      }
    }
  });
  return pieces;
}

function pieceImage(symbol) {
  const color = symbol === symbol.toUpperCase() ? "w" : "b";
  return `/pieces/${color}${symbol.toUpperCase()}.svg`;
}

function heatColor(value, limit) {
  // Green helped the mover, pink worked against it (matplotlib's PiYG ends).
  const t = Math.max(-1, Math.min(1, value / (limit || 1)));
  const [r, g, b] = t >= 0 ? [77, 146, 33] : [197, 27, 125];
  return `rgba(${r},${g},${b},${(0.15 + 0.7 * Math.abs(t)).toFixed(3)})`;
}

class ChessBoard {
  constructor(container, { onMove }) {
    this.onMove = onMove;
    this.flipped = false;
    this.pieces = {};
    this.legal = [];
    this.selected = null;
    this.lastMove = null;
    this.check = null;
    this.heat = null;
    this.interactive = true;
    this.root = svg("svg", { viewBox: `0 0 ${8 * SIZE} ${8 * SIZE}`, class: "board", id: "board-svg" }, container);
    this.squaresLayer = svg("g", {}, this.root);
    this.heatLayer = svg("g", {}, this.root);
    this.marksLayer = svg("g", {}, this.root);
    this.piecesLayer = svg("g", {}, this.root);
    this.hintsLayer = svg("g", {}, this.root);
    this.dragLayer = svg("g", {}, this.root);
    this.promotion = document.createElement("div");
    this.promotion.className = "promotion hidden";
    container.appendChild(this.promotion);
    this.root.addEventListener("pointerdown", (e) => this._pointerDown(e));
    this.root.addEventListener("pointermove", (e) => this._pointerMove(e));
    this.root.addEventListener("pointerup", (e) => this._pointerUp(e));
    this.drag = null;
    this.draw();
  }

  setPosition(fen, legal, lastMove, check) {
    this.pieces = parsePlacement(fen);
    this.turn = fen.split(" ")[1];
    this.legal = legal || [];
    this.lastMove = lastMove;
    this.check = check;
    this.selected = null;
    this.draw();
  }

  setHeat(heat) {
    this.heat = heat;
    this.draw();
  }

  flip() {
    this.flipped = !this.flipped;
    this.draw();
  }

  xy(square) {
    const file = FILES.indexOf(square[0]);
    const rank = Number(square[1]) - 1;
    return this.flipped ? [(7 - file) * SIZE, rank * SIZE] : [file * SIZE, (7 - rank) * SIZE];
  }

  squareAt(event) {
    const box = this.root.getBoundingClientRect();
    const x = Math.floor(((event.clientX - box.left) / box.width) * 8);
    const y = Math.floor(((event.clientY - box.top) / box.height) * 8);
    if (x < 0 || x > 7 || y < 0 || y > 7) return null;
    const file = this.flipped ? 7 - x : x;
    const rank = this.flipped ? y : 7 - y;
    return FILES[file] + (rank + 1);
  }

  targets(from) {
    return [...new Set(this.legal.filter((m) => m.startsWith(from)).map((m) => m.slice(2, 4)))];
  }

  draw() {
    for (const layer of [this.squaresLayer, this.heatLayer, this.marksLayer, this.piecesLayer, this.hintsLayer]) {
      layer.replaceChildren();
    }
    for (let file = 0; file < 8; file++) {
      for (let rank = 0; rank < 8; rank++) {
        const square = FILES[file] + (rank + 1);
        const [x, y] = this.xy(square);
        svg("rect", {
          x, y, width: SIZE, height: SIZE,
          class: (file + rank) % 2 === 1 ? "light" : "dark",
          "data-square": square,
        }, this.squaresLayer);
        if ((this.flipped ? file === 7 : file === 0)) {
          svg("text", { x: x + 3, y: y + 14, class: "coord" }, this.squaresLayer).textContent = rank + 1;
        }
        if ((this.flipped ? rank === 7 : rank === 0)) {
          svg("text", { x: x + SIZE - 10, y: y + SIZE - 4, class: "coord" }, this.squaresLayer).textContent = FILES[file];
        }
      }
    }
    if (this.heat) {
      const limit = Math.max(1e-6, ...Object.values(this.heat).map(Math.abs));
      for (const [square, value] of Object.entries(this.heat)) {
        const [x, y] = this.xy(square);
        svg("rect", { x, y, width: SIZE, height: SIZE, fill: heatColor(value, limit), class: "heat", "data-square": square }, this.heatLayer);
      }
    }
    if (this.lastMove) {
      for (const square of [this.lastMove.slice(0, 2), this.lastMove.slice(2, 4)]) {
        const [x, y] = this.xy(square);
        svg("rect", { x, y, width: SIZE, height: SIZE, class: "last" }, this.marksLayer);
      }
    }
    if (this.check) {
      const [x, y] = this.xy(this.check);
      svg("circle", { cx: x + SIZE / 2, cy: y + SIZE / 2, r: SIZE / 2, class: "check" }, this.marksLayer);
    }
    if (this.selected) {
      const [x, y] = this.xy(this.selected);
      svg("rect", { x, y, width: SIZE, height: SIZE, class: "selected" }, this.marksLayer);
      for (const target of this.targets(this.selected)) {
        const [tx, ty] = this.xy(target);
        const capture = Boolean(this.pieces[target]);
        svg("circle", {
          cx: tx + SIZE / 2, cy: ty + SIZE / 2, r: capture ? SIZE / 2 - 3 : SIZE / 7,
          class: capture ? "hint capture" : "hint", "data-square": target,
        }, this.hintsLayer);
      }
    }
    for (const [square, symbol] of Object.entries(this.pieces)) {
      if (this.drag && this.drag.moved && this.drag.from === square) continue;
      const [x, y] = this.xy(square);
      svg("image", { href: pieceImage(symbol), x, y, width: SIZE, height: SIZE, "data-square": square, "data-piece": symbol }, this.piecesLayer);
    }
  }

  ownPiece(square) {
    const symbol = this.pieces[square];
    if (!symbol) return false;
    return (symbol === symbol.toUpperCase()) === (this.turn === "w");
  }

  _pointerDown(event) {
    if (!this.interactive) return;
    const square = this.squareAt(event);
    if (!square) return;
    if (this.selected && this.targets(this.selected).includes(square)) {
      this._tryMove(this.selected, square);
      return;
    }
    if (this.ownPiece(square) && this.targets(square).length) {
      this.selected = square;
      this.drag = { from: square, moved: false, start: [event.clientX, event.clientY] };
      this.root.setPointerCapture(event.pointerId);
    } else {
      this.selected = null;
    }
    this.draw();
  }

  _pointerMove(event) {
    if (!this.drag) return;
    const [sx, sy] = this.drag.start;
    if (!this.drag.moved && Math.hypot(event.clientX - sx, event.clientY - sy) < 6) return;
    if (!this.drag.moved) {
      this.drag.moved = true;
      this.draw();
    }
    const box = this.root.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * 8 * SIZE - SIZE / 2;
    const y = ((event.clientY - box.top) / box.height) * 8 * SIZE - SIZE / 2;
    this.dragLayer.replaceChildren();
    svg("image", { href: pieceImage(this.pieces[this.drag.from]), x, y, width: SIZE, height: SIZE, class: "dragging" }, this.dragLayer);
  }

  _pointerUp(event) {
    if (!this.drag) return;
    const drag = this.drag;
    this.drag = null;
    this.dragLayer.replaceChildren();
    if (!drag.moved) return;
    const square = this.squareAt(event);
    if (square && this.targets(drag.from).includes(square)) this._tryMove(drag.from, square);
    else this.draw();
  }

  _tryMove(from, to) {
    const candidates = this.legal.filter((m) => m.startsWith(from + to));
    this.selected = null;
    if (candidates.length === 1) {
      this.onMove(candidates[0]);
    } else if (candidates.length > 1) {
      this._choosePromotion(from, to, candidates);
    }
    this.draw();
  }

  _choosePromotion(from, to, candidates) {
    this.promotion.replaceChildren();
    const white = this.turn === "w";
    for (const piece of ["q", "r", "b", "n"]) {
      const uci = from + to + piece;
      if (!candidates.includes(uci)) continue;
      const button = document.createElement("button");
      button.className = "promote";
      button.dataset.piece = piece;
      const image = document.createElement("img");
      image.src = pieceImage(white ? piece.toUpperCase() : piece);
      image.alt = piece;
      button.appendChild(image);
      button.addEventListener("click", () => {
        this.promotion.classList.add("hidden");
        this.onMove(uci);
      });
      this.promotion.appendChild(button);
    }
    const cancel = document.createElement("button");
    cancel.textContent = "×";
    cancel.addEventListener("click", () => this.promotion.classList.add("hidden"));
    this.promotion.appendChild(cancel);
    this.promotion.classList.remove("hidden");
  }
}

window.ChessBoard = ChessBoard;
