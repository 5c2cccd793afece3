// The page: one session per tab, the board, the opponent, live analysis over server-sent events,
// the latent view (map + axis-per-ply plot) and move explanations. Everything is validated again
// on the server; this file only draws what the server says.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

const app = {
  session: null,
  state: null,
  info: null,
  view: null,
  analysis: null, // the EventSource of the running analysis
  candidates: {}, // uci -> row data
  thinking: false,
  explained: null,
  clocks: { on: false, white: 0, black: 0, timer: null, last: 0 },
};

function setStatus(text, kind) {
  const node = $("status");
  node.textContent = text || "";
  node.className = "status" + (kind ? " " + kind : "");
}

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { data = text; }
  if (!response.ok) {
    const message = data && data.error ? data.error : `HTTP ${response.status}`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

function sessionPath(suffix) {
  return `/api/sessions/${app.session}${suffix || ""}`;
}

// -- board and game --------------------------------------------------------------------------

const board = new ChessBoard($("board"), { onMove: (uci) => playMove(uci) });

function engineSide() {
  return $("engine-side").value;
}

function render(state) {
  app.state = state;
  board.setPosition(state.fen, state.legal, state.last_move, state.check);
  board.interactive = !app.thinking;
  $("fen").textContent = state.fen;
  $("undo").disabled = !state.can_undo;
  $("redo").disabled = !state.can_redo;
  $("result").textContent = state.result ? `${state.result} (${state.termination})` : "";
  $("opponent-spec").textContent = `playing: ${state.opponent.spec}, ${state.opponent.movetime_ms} ms/move`;
  renderMoves(state);
  drawView(state);
  drawAxisPlot(state);
}

function renderMoves(state) {
  const list = $("moves");
  list.replaceChildren();
  let number = state.first_move_number;
  let white = state.first_turn === "white";
  state.sans.forEach((san, index) => {
    if (white || index === 0) {
      const label = document.createElement("span");
      label.className = "move-number";
      label.textContent = white ? `${number}.` : `${number}...`;
      list.appendChild(label);
    }
    const item = document.createElement("button");
    item.className = "move";
    item.textContent = san;
    item.dataset.ply = index + 1;
    item.title = "explain this move";
    item.addEventListener("click", () => explainPly(index + 1));
    list.appendChild(item);
    if (!white) number += 1;
    white = !white;
  });
}

async function playMove(uci) {
  if (app.thinking) return;
  stopAnalysis();
  clearExplanation();
  try {
    render(await api("POST", sessionPath("/move"), { uci }));
    tickClock();
    await afterMove();
  } catch (error) {
    setStatus(error.message, "error");
  }
}

async function afterMove() {
  const state = app.state;
  if (!state.result && state.turn === engineSide()) {
    await engineMove();
  } else if ($("auto-analyse").checked && !state.result) {
    startAnalysis();
  }
}

async function engineMove() {
  if (app.state.result) return;
  stopAnalysis();
  app.thinking = true;
  board.interactive = false;
  setStatus(`${app.state.opponent.spec} is thinking…`, "busy");
  try {
    const state = await api("POST", sessionPath("/engine-move"));
    app.thinking = false;
    render(state);
    tickClock();
    setStatus(`engine played ${state.sans[state.sans.length - 1]}`);
    if ($("auto-analyse").checked && !state.result) startAnalysis();
  } catch (error) {
    app.thinking = false;
    board.interactive = true;
    setStatus(error.status === 409 ? "engine search cancelled" : error.message, error.status === 409 ? "" : "error");
  }
}

async function simple(path, body) {
  stopAnalysis();
  clearExplanation();
  try {
    render(await api("POST", sessionPath(path), body));
    setStatus("");
    if ($("auto-analyse").checked && !app.state.result) startAnalysis();
  } catch (error) {
    setStatus(error.message, "error");
  }
}

// -- opponent ------------------------------------------------------------------------------------

function fillEngineForm(info) {
  const select = $("engine-kind");
  select.replaceChildren();
  for (const engine of info.engines) {
    const option = document.createElement("option");
    option.value = engine.kind;
    option.textContent = engine.kind;
    select.appendChild(option);
  }
  select.addEventListener("change", () => fillParams());
  $("movetime").max = info.max_think_ms;
  fillParams();
}

function fillParams() {
  const kind = $("engine-kind").value;
  const engine = app.info.engines.find((e) => e.kind === kind);
  const holder = $("engine-params");
  holder.replaceChildren();
  for (const param of engine.params) {
    const label = document.createElement("label");
    label.textContent = param.name + " ";
    let input;
    if (param.choices) {
      input = document.createElement("select");
      for (const choice of param.choices) {
        const option = document.createElement("option");
        option.value = option.textContent = choice;
        input.appendChild(option);
      }
      input.value = param.default;
    } else {
      input = document.createElement("input");
      input.type = "number";
      input.min = param.min;
      input.max = param.max;
      input.value = param.default === null ? "" : param.default;
      input.className = "param-number";
    }
    input.dataset.param = param.name;
    input.id = `param-${param.name}`;
    label.appendChild(input);
    holder.appendChild(label);
  }
}

async function applyOpponent() {
  const params = {};
  for (const input of $("engine-params").querySelectorAll("[data-param]")) {
    if (input.value === "") continue;
    params[input.dataset.param] = input.tagName === "SELECT" ? input.value : Number(input.value);
  }
  try {
    const answer = await api("POST", sessionPath("/opponent"), {
      kind: $("engine-kind").value,
      params,
      movetime_ms: Number($("movetime").value),
    });
    app.state.opponent = answer.opponent;
    $("opponent-spec").textContent = `playing: ${answer.opponent.spec}, ${answer.opponent.movetime_ms} ms/move`;
    setStatus("opponent set");
    if (!app.state.result && app.state.turn === engineSide()) await engineMove();
  } catch (error) {
    setStatus(error.message, "error");
  }
}

// -- analysis (server-sent events) ---------------------------------------------------------------

function stopAnalysis() {
  if (app.analysis) {
    app.analysis.close(); // the server sees the stream end and stops the search
    app.analysis = null;
  }
  $("analysis-state").textContent = "";
}

function startAnalysis() {
  stopAnalysis();
  app.candidates = {};
  app.sfReported = false;
  const ms = Math.min(3000, app.info.max_think_ms);
  const source = new EventSource(sessionPath(`/analysis?ms=${ms}`));
  app.analysis = source;
  $("analysis-state").textContent = "thinking…";
  source.addEventListener("candidates", (e) => {
    const data = JSON.parse(e.data);
    for (const move of data.moves) app.candidates[move.uci] = { ...move };
    drawCandidates();
  });
  source.addEventListener("iteration", (e) => showLatent(JSON.parse(e.data)));
  source.addEventListener("latent", (e) => {
    const data = JSON.parse(e.data);
    showLatent(data);
    for (const move of data.moves) {
      if (app.candidates[move.uci]) app.candidates[move.uci].search = move.value;
    }
    drawCandidates();
  });
  source.addEventListener("alphabeta", (e) => {
    const data = JSON.parse(e.data);
    for (const move of data.moves) {
      if (app.candidates[move.uci]) {
        app.candidates[move.uci].cp = move.mate !== null ? `#${move.mate}` : move.cp;
        app.candidates[move.uci].sf_wp = move.win_prob;
      }
    }
    const best = data.moves[0];
    if (best) {
      app.sfReported = true;
      $("sf-score").textContent = `${formatCp(best.mate !== null ? null : best.cp, best.mate)} (d${data.depth})`;
      setEvalBar(best.win_prob, "Stockfish");
    }
    drawCandidates();
  });
  source.addEventListener("error", (e) => {
    if (e.data) setStatus(JSON.parse(e.data).error, "error");
  });
  source.addEventListener("done", () => {
    $("analysis-state").textContent = "done";
    source.close();
    if (app.analysis === source) app.analysis = null;
  });
  source.onerror = () => {
    source.close();
    if (app.analysis === source) app.analysis = null;
  };
}

function formatCp(cp, mate) {
  if (mate !== null && mate !== undefined) return `#${mate}`;
  if (cp === null || cp === undefined) return "–";
  return (cp >= 0 ? "+" : "") + (cp / 100).toFixed(2);
}

function showLatent(data) {
  const wp = data.win_prob;
  // The engine reports cp and mate for the side to move (UCI); the page shows White's view.
  const sign = app.state && app.state.turn === "black" ? -1 : 1;
  const cp = data.cp === null ? null : sign * data.cp;
  const mate = data.mate === null ? null : sign * data.mate;
  $("latent-score").textContent = `P(White) ${wp === null ? "–" : wp.toFixed(3)} · ${formatCp(cp, mate)} (d${data.depth})`;
  $("pv").textContent = data.pv.join(" ");
  if (!app.sfReported) setEvalBar(wp, "latent");
}

function setEvalBar(wp, source) {
  if (wp === null || wp === undefined) return;
  $("evalbar-fill").style.height = `${(wp * 100).toFixed(1)}%`;
  $("evalbar-text").textContent = wp.toFixed(2);
  $("evalbar").title = `White's win probability (${source})`;
}

function drawCandidates() {
  const body = $("candidates").querySelector("tbody");
  body.replaceChildren();
  const white = app.state.turn === "white";
  const rows = Object.values(app.candidates);
  const key = (row) => (row.search !== undefined && row.search !== null ? row.search : row.axis);
  rows.sort((a, b) => (white ? key(b) - key(a) : key(a) - key(b)));
  for (const row of rows.slice(0, 12)) {
    const tr = document.createElement("tr");
    tr.dataset.uci = row.uci;
    const cells = [
      row.san,
      row.axis === null ? "–" : row.axis.toFixed(4),
      row.search === undefined || row.search === null ? "" : row.search.toFixed(4),
      row.cp === undefined ? "" : typeof row.cp === "string" ? row.cp : formatCp(row.cp, null),
    ];
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    const td = document.createElement("td");
    const button = document.createElement("button");
    button.textContent = "explain";
    button.className = "small";
    button.addEventListener("click", () => explain(app.state.fen, row.uci));
    td.appendChild(button);
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

// -- latent view ---------------------------------------------------------------------------------

function scaler(points, width, height, pad) {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  return (p) => [
    pad + ((p[0] - x0) / (x1 - x0 || 1)) * (width - 2 * pad),
    height - pad - ((p[1] - y0) / (y1 - y0 || 1)) * (height - 2 * pad),
  ];
}

function winColor(p) {
  // Blue (Black wins) through white to red (White wins), as in docs/umap.png.
  const t = Math.max(0, Math.min(1, p));
  const r = Math.round(t < 0.5 ? 33 + (255 - 33) * (t / 0.5) : 255 - (255 - 178) * ((t - 0.5) / 0.5));
  const g = Math.round(t < 0.5 ? 102 + (255 - 102) * (t / 0.5) : 255 - (255 - 24) * ((t - 0.5) / 0.5));
  const b = Math.round(t < 0.5 ? 172 + (255 - 172) * (t / 0.5) : 255 - (255 - 43) * ((t - 0.5) / 0.5));
  return `rgb(${r},${g},${b})`;
}

function node(tag, attrs, parent) {
  const element = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) element.setAttribute(k, v);
  parent.appendChild(element);
  return element;
}

function drawViewBackground() {
  const map = $("latent-map");
  map.replaceChildren();
  const view = app.view;
  app.mapScale = scaler(view.points, 400, 300, 14);
  const background = node("g", { id: "map-background" }, map);
  view.points.forEach((p, i) => {
    const [x, y] = app.mapScale(p);
    node("circle", { cx: x.toFixed(1), cy: y.toFixed(1), r: 1.6, fill: winColor(view.win_prob[i]), opacity: 0.55 }, background);
  });
  // The axis: its 2-D image, drawn through the map's centre (PCA keeps directions).
  const centre = app.mapScale([0, 0]);
  const ax = view.axis;
  const length = Math.hypot(ax[0], ax[1]) || 1;
  const spanX = Math.max(...view.points.map((p) => Math.abs(p[0])));
  const tip = app.mapScale([(ax[0] / length) * spanX * 0.8, (ax[1] / length) * spanX * 0.8]);
  const tail = app.mapScale([-(ax[0] / length) * spanX * 0.8, -(ax[1] / length) * spanX * 0.8]);
  const defs = node("defs", {}, map);
  const marker = node("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, defs);
  node("path", { d: "M0,0 L10,5 L0,10 z", fill: "#222" }, marker);
  node("line", { x1: tail[0], y1: tail[1], x2: tip[0], y2: tip[1], class: "axis-arrow", "marker-end": "url(#arrow)" }, map);
  node("text", { x: tip[0] - 70, y: tip[1] - 6, class: "map-label" }, map).textContent = "advantage axis → White";
  node("g", { id: "trajectory" }, map);
  $("view-info").textContent =
    `PCA, ${(100 * (view.explained[0] + view.explained[1])).toFixed(0)}% of variance; ` +
    `${(100 * length).toFixed(0)}% of the axis lies in the plane`;
}

function drawView(state) {
  if (!app.view) return;
  const group = $("trajectory");
  group.replaceChildren();
  const points = state.trajectory.map((t) => app.mapScale([t.x, t.y]));
  if (points.length > 1) {
    node("polyline", { points: points.map((p) => p.join(",")).join(" "), class: "trajectory-line" }, group);
  }
  points.forEach((p, i) => {
    const last = i === points.length - 1;
    const circle = node("circle", {
      cx: p[0], cy: p[1], r: last ? 5 : 3,
      class: last ? "trajectory-point current" : "trajectory-point",
      "data-ply": state.trajectory[i].ply,
    }, group);
    const title = document.createElementNS(SVG, "title");
    title.textContent = `ply ${i}${state.trajectory[i].san ? " " + state.trajectory[i].san : ""}: axis ${state.trajectory[i].axis}`;
    circle.appendChild(title);
  });
}

function drawAxisPlot(state) {
  const plot = $("axis-plot");
  plot.replaceChildren();
  const W = 400, H = 160, L = 34, R = 8, T = 8, B = 20;
  const n = Math.max(state.trajectory.length - 1, 1);
  const x = (ply) => L + (ply / n) * (W - L - R);
  const axisValues = state.trajectory.map((t) => t.axis);
  const lim = Math.max(0.05, ...axisValues.map(Math.abs));
  const yAxis = (v) => T + (1 - (v / lim + 1) / 2) * (H - T - B);
  const yProb = (p) => T + (1 - p) * (H - T - B);
  node("line", { x1: L, x2: W - R, y1: yAxis(0), y2: yAxis(0), class: "zero" }, plot);
  node("text", { x: 2, y: T + 8, class: "tick" }, plot).textContent = `+${lim.toFixed(2)}`;
  node("text", { x: 2, y: H - B, class: "tick" }, plot).textContent = `-${lim.toFixed(2)}`;
  node("text", { x: W - R - 26, y: T + 8, class: "tick prob" }, plot).textContent = "P=1";
  node("text", { x: W - R - 26, y: H - B, class: "tick prob" }, plot).textContent = "P=0";
  node("text", { x: L, y: H - 4, class: "tick" }, plot).textContent = "ply 0";
  node("text", { x: W - R - 40, y: H - 4, class: "tick" }, plot).textContent = `ply ${n}`;
  const line = (values, yOf, cls) => {
    const pts = values.map((v, i) => (v === null || v === undefined ? null : `${x(i).toFixed(1)},${yOf(v).toFixed(1)}`)).filter(Boolean);
    if (pts.length) node("polyline", { points: pts.join(" "), class: cls }, plot);
  };
  line(state.trajectory.map((t) => t.referee), yProb, "referee-line");
  line(axisValues, yAxis, "axis-line");
  state.trajectory.forEach((t, i) => {
    if (t.engine !== null && t.engine !== undefined) {
      const dot = node("circle", { cx: x(i), cy: yProb(t.engine), r: 3, class: "engine-dot", "data-ply": t.ply }, plot);
      if (t.engine_eval) {
        const title = document.createElementNS(SVG, "title");
        title.textContent = `ply ${t.ply}: ${describeEngineEval(t.engine_eval)}`;
        dot.appendChild(title);
      }
    }
  });
  const last = [...state.trajectory].reverse().find((t) => t.engine_eval);
  $("engine-eval").textContent = last ? describeEngineEval(last.engine_eval) : "";
}

function describeEngineEval(e) {
  // The opponent's own evaluation of the position it moved from (White's view).
  const parts = [`${e.engine} played ${e.move || "?"}`];
  if (e.cp !== null || e.mate !== null) parts.push(formatCp(e.cp, e.mate));
  if (e.win_prob !== null) parts.push(`P(White) ${e.win_prob.toFixed(3)}`);
  if (e.depth) parts.push(`d${e.depth}`);
  let text = parts.join(" · ");
  if (e.pv && e.pv.length) text += ` · PV ${e.pv.join(" ")}`;
  return text;
}

// -- explanations --------------------------------------------------------------------------------

function clearExplanation() {
  app.explained = null;
  board.setHeat(null);
  $("explain-text").replaceChildren();
  $("explain-title").textContent = "";
}

async function explainPly(ply) {
  // The position before ply `ply` is reached by replaying the game's first ply-1 moves.
  const state = app.state;
  const before = await positionBefore(state, ply);
  if (before) await explain(before, state.ucis[ply - 1]);
}

async function positionBefore(state, ply) {
  return state.trajectory[ply - 1] ? state.trajectory[ply - 1].fen : null;
}

async function explain(fen, uci) {
  try {
    const data = await api("POST", "/api/explain", { fen, move: uci });
    app.explained = data;
    const heat = {};
    for (const piece of data.pieces) heat[piece.square] = piece.contribution;
    // The heat map belongs on the board only where its squares match what is shown: a move from
    // the current position, or the last move (its pieces stood where they stand now, but for
    // the mover, drawn on its from-square).
    const last = app.state.trajectory.length > 1 ? app.state.trajectory[app.state.trajectory.length - 2] : null;
    const onBoard = fen === app.state.fen || (last && last.fen === fen && app.state.last_move === uci);
    board.setHeat(onBoard ? heat : null);
    $("explain-title").textContent = data.san;
    const holder = $("explain-text");
    holder.replaceChildren();
    const summary = document.createElement("p");
    summary.textContent =
      `${data.san}: axis ${data.score_before.toFixed(4)} → ${data.score_after.toFixed(4)}, ` +
      `change for the mover ${data.change >= 0 ? "+" : ""}${data.change.toFixed(4)}; ` +
      `P(White) ${data.win_prob_before.toFixed(3)} → ${data.win_prob_after.toFixed(3)}.`;
    holder.appendChild(summary);
    const table = document.createElement("table");
    table.className = "explain-table";
    for (const piece of data.pieces.slice(0, 8)) {
      const tr = document.createElement("tr");
      for (const text of [piece.square, piece.piece, piece.role, (piece.contribution >= 0 ? "+" : "") + piece.contribution.toFixed(4)]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
    holder.appendChild(table);
    const note = document.createElement("p");
    note.className = "muted";
    note.textContent = onBoard
      ? "Heat map: squares of the pieces before the move (the mover on its from-square); " +
        "green helped the mover, pink worked against it."
      : "(An earlier move: the heat map is drawn only for the last move and moves from the " +
        "current position.)";
    holder.appendChild(note);
  } catch (error) {
    setStatus(error.message, "error");
  }
}

// -- clocks --------------------------------------------------------------------------------------

function formatClock(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function tickClock() {
  const c = app.clocks;
  if (!c.on) return;
  c.last = performance.now();
}

function startClocks() {
  const c = app.clocks;
  c.on = $("clocks-on").checked;
  $("clocks").classList.toggle("hidden", !c.on);
  clearInterval(c.timer);
  if (!c.on) return;
  c.white = c.black = Number($("clock-minutes").value) * 60;
  c.last = performance.now();
  c.timer = setInterval(() => {
    if (!app.state || app.state.result) return;
    const now = performance.now();
    const side = app.state.turn;
    c[side] -= (now - c.last) / 1000;
    c.last = now;
    $("clock-white").textContent = formatClock(c.white);
    $("clock-black").textContent = formatClock(c.black);
    $(`clock-${side}`).classList.toggle("flagged", c[side] <= 0);
    if (c[side] <= 0) setStatus(`${side} lost on time`, "error");
  }, 200);
}

// -- start-up ------------------------------------------------------------------------------------

async function exportPgn() {
  try {
    const response = await fetch(sessionPath("/pgn"));
    const text = await response.text();
    if (!response.ok) throw new Error(text);
    $("pgn-output").textContent = text;
    $("pgn-output").classList.remove("hidden");
    const link = $("pgn-download");
    link.href = URL.createObjectURL(new Blob([text], { type: "application/x-chess-pgn" }));
    link.classList.remove("hidden");
  } catch (error) {
    setStatus(error.message, "error");
  }
}

function bind() {
  $("flip").addEventListener("click", () => board.flip());
  $("undo").addEventListener("click", () => simple("/undo"));
  $("redo").addEventListener("click", () => simple("/redo"));
  $("engine-move").addEventListener("click", () => engineMove());
  $("analyse").addEventListener("click", () => startAnalysis());
  $("new-game").addEventListener("click", () => {
    startClocks();
    simple("/new", { fen: $("fen-input").value.trim() || "startpos" }).then(() => {
      if (app.state && app.state.turn === engineSide()) engineMove();
    });
  });
  $("import-pgn").addEventListener("click", () => simple("/pgn", { pgn: $("pgn-input").value }));
  $("export-pgn").addEventListener("click", () => exportPgn());
  $("apply-opponent").addEventListener("click", () => applyOpponent());
  $("explain-last").addEventListener("click", () => {
    if (app.state.sans.length) explainPly(app.state.sans.length);
  });
  $("explain-clear").addEventListener("click", () => clearExplanation());
  $("clocks-on").addEventListener("change", () => startClocks());
  window.addEventListener("pagehide", () => {
    if (app.session) navigator.sendBeacon(sessionPath("/close"));
  });
}

async function main() {
  bind();
  try {
    app.info = await api("GET", "/api/info");
    $("model-info").textContent = `model ${app.info.model.name} (${app.info.model.dim}-d, ${app.info.model.precision})`;
    fillEngineForm(app.info);
    app.view = await api("GET", "/api/view");
    drawViewBackground();
    const state = await api("POST", "/api/sessions");
    app.session = state.id;
    document.body.dataset.session = state.id;
    render(state);
    if ($("auto-analyse").checked) startAnalysis();
    document.body.dataset.ready = "1";
  } catch (error) {
    setStatus(`could not start: ${error.message}`, "error");
  }
}

main();
