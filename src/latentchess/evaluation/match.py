"""Matches between any two engines of the common interface, recorded as PGN.

Schedule: round ``r`` (1-based) plays opening ``(r - 1) // 2`` (cycling when there are fewer
openings than pairs of games), player 1 White in odd rounds and Black in even ones, so every opening
is played with both colours. Games run concurrently on ``workers`` threads, or on the workers of a
cluster (:mod:`latentchess.cluster`; a game is the unit of work); each thread owns its own engine
instances (external engines are processes; one thinks at a time per game, so a worker keeps about
one core busy). An engine that crashed, hung or cheated is restarted for the next game. Only this
process writes the PGN, so a worker lost mid-game costs that game, which is played again.

Each finished game is appended to the PGN at once (plain, or compressed by the file's suffix:
``.pgn.gz``, ``.pgn.xz``; :mod:`latentchess.textfiles`), so an interrupted run keeps every finished
game, and a later run with the same event, players and openings skips the rounds already in the file
(resume); a file whose rounds disagree with this run's schedule is refused, and so is a run whose
engine runs another model (content hash) or precision than the games already in the file
(``WhiteModelHash``/``WhitePrecision`` headers). Within a run, every engine instance of a player
must run the same model at the same precision as its first one (``auto`` is measured per load). How
a single game is played, ended and recorded: :mod:`latentchess.evaluation.game`.

SPRT mode (``MatchConfig.sprt``): ``games`` becomes the maximum. After every game the test is
recomputed from the complete pairs (:mod:`latentchess.evaluation.sprt`); once the LLR crosses a
bound no new pair is started, but the games in flight and the missing game of any pair already
begun are still played, so the PGN ends on complete pairs (the LLR is recomputed with them; should
it fall back between the bounds, play goes on). Games are handed to the workers in round order, one
at a time as workers free up. Every game of an SPRT run carries two PGN tags: ``SPRT`` (the test:
``elo0=0 elo1=10 alpha=0.05 beta=0.05 model=logistic``) and ``SPRTStatus`` (the test after this
game was written: LLR, bounds, pairs, pentanomial and decision), so the last game of the file holds
the result. Resuming with other SPRT parameters than the games in the file is refused.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import io
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from latentchess.cluster import ThreadPool, WorkPool, discard_resource, new_tag, worker_resource
from latentchess.engines.base import Engine
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.evaluation.elo import EloDiff, score_elo
from latentchess.evaluation.game import (
    Adjudication,
    GameRecord,
    GameSettings,
    Player,
    describe_engine,
    play_game,
)
from latentchess.evaluation.openings import Opening
from latentchess.evaluation.sprt import SprtConfig, SprtStatus, sprt_status
from latentchess.textfiles import append_text, open_text

__all__ = [
    "Player",
    "Adjudication",
    "MatchConfig",
    "GameRecord",
    "MatchResult",
    "run_match",
    "play_game",
    "default_workers",
    "describe_engine",
]


def default_workers() -> int:
    """Concurrent games by default: 2, or 1 on a single core."""
    return max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True, kw_only=True)
class MatchConfig(GameSettings):
    """What a match plays: the games' :class:`~latentchess.evaluation.game.GameSettings`
    (``event``, ``site``, ``time_margin``, ``max_plies``, ``adjudication``) and:

    Attributes:
        games: total rounds (each opening is used for two consecutive rounds); with ``sprt``,
            the most rounds played (even: the test counts pairs).
        workers: games played concurrently.
        progress: show a progress bar on stderr.
        sprt: stop early when this sequential test decides (see the module docstring).
    """

    games: int
    workers: int = field(default_factory=default_workers)
    progress: bool = True
    sprt: SprtConfig | None = None

    def __post_init__(self) -> None:
        if self.games < 1:
            raise LatentChessError(f"a match needs at least one game, got {self.games}")
        if self.sprt is not None and self.games % 2:
            raise LatentChessError(
                f"an SPRT counts pairs of games: the maximum must be even, got {self.games}"
            )
        if self.workers < 1:
            raise LatentChessError(f"workers must be at least 1, got {self.workers}")


@dataclass(frozen=True, kw_only=True)
class MatchResult:
    """All games of a match between ``player1`` and ``player2`` (resumed ones included).

    Attributes:
        player1, player2: names.
        games: the games, by round.
        resumed: how many were read back from the PGN rather than played now.
        sprt: the sequential test, when the match ran one.
    """

    player1: str
    player2: str
    games: list[GameRecord]
    resumed: int = 0
    sprt: SprtConfig | None = None

    def points(self) -> dict[int, float]:
        """Player 1's points per round."""
        return {game.round: _points(game, self.player1) for game in self.games}

    def sprt_status(self) -> SprtStatus | None:
        """The sequential test over the complete pairs so far (None without a test)."""
        return None if self.sprt is None else sprt_status(self.sprt, self.points())

    @property
    def score(self) -> tuple[int, int, int]:
        """Player 1's wins, draws, losses."""
        wins = draws = losses = 0
        for game in self.games:
            points = _points(game, self.player1)
            wins += points == 1.0
            draws += points == 0.5
            losses += points == 0.0
        return wins, draws, losses

    def elo(self) -> EloDiff:
        """Player 1's Elo difference over player 2, with its 95% interval."""
        return score_elo(*self.score)

    def summary(self) -> str:
        """One line: score and Elo difference."""
        wins, draws, losses = self.score
        line = (
            f"{self.player1} vs {self.player2}: +{wins} ={draws} -{losses} "
            f"({len(self.games)} games), Elo difference {self.elo()}"
        )
        status = self.sprt_status()
        if status is None:
            return line
        verdict = {"H1": "H1 accepted", "H0": "H0 accepted", None: "no decision"}
        unfinished = len(status.unfinished)
        return (
            f"{line}\nSPRT {status.line()}: {verdict[status.decision]} after {status.pairs} "
            f"pairs, Ptnml(0-2) {list(status.counts)}"
            + (f", {unfinished} unfinished pair(s) not counted" if unfinished else "")
        )


def _points(game: GameRecord, player: str) -> float:
    white_points = {"1-0": 1.0, "0-1": 0.0}.get(game.result, 0.5)
    return white_points if game.white == player else 1.0 - white_points


# --- the match ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Game:
    """One game of a match as a unit of work: it pickles (players, config, run tag), so it runs
    on a thread here or on a cluster worker, with that thread's engines of the run."""

    tag: str
    player1: Player
    player2: Player
    config: MatchConfig
    chess960: bool = False

    def engine(self, slot: int, player: Player) -> Engine:
        engine = worker_resource(self.tag, slot, player.make)
        if self.chess960 and not engine.supports_chess960():
            raise LatentChessError(
                f"{player.name} ({player.spec or player.name}) cannot play Chess960; "
                "choose engines that can (ab, external engines with UCI_Chess960)"
            )
        return engine

    def __call__(self, round_number: int, opening: Opening) -> GameRecord:
        first_white = round_number % 2 == 1
        slots = (0, 1) if first_white else (1, 0)
        players = (self.player1, self.player2)
        sides = (players[slots[0]], players[slots[1]])
        white = (sides[0], self.engine(slots[0], sides[0]))
        black = (sides[1], self.engine(slots[1], sides[1]))
        judge = self.config.adjudication
        adjudicator = None if judge is None else worker_resource(self.tag, 2, judge.make)
        record, crashed = play_game(
            round_number=round_number,
            opening=opening,
            white=white,
            black=black,
            config=self.config,
            adjudicator=adjudicator,
        )
        keys = {"white": slots[0], "black": slots[1], "adjudicator": 2}
        for which in crashed:
            discard_resource(self.tag, keys[which])
        return record


def run_match(
    player1: Player,
    player2: Player,
    openings: Sequence[Opening],
    config: MatchConfig,
    *,
    pgn_path: str | Path | None = None,
    on_game: Callable[[GameRecord, MatchResult], None] | None = None,
    pool: WorkPool | None = None,
) -> MatchResult:
    """Play (or finish) a match; see the module docstring.

    Args:
        player1, player2: the players (distinct names).
        openings: opening list; round ``r`` uses ``openings[((r - 1) // 2) % len(openings)]``.
        config: games, workers, adjudication, ...
        pgn_path: append games here (``.pgn``, ``.pgn.gz``, ``.pgn.xz``...: compressed by the
            suffix); rounds of this match already in the file are skipped.
        on_game: called in the main thread after each finished game.
        pool: where games run (:func:`latentchess.cluster.open_pool`; its slots replace
            ``config.workers``); default: ``config.workers`` threads of this process. On a
            cluster the players' and adjudicator's ``make`` must pickle
            (:meth:`Player.from_spec` players do).

    Raises:
        LatentChessError: for an invalid setup, a resumed file that disagrees with this run's
            schedule, or an engine that cannot be (re)started (finished games are kept).
    """
    if player1.name == player2.name:
        raise LatentChessError(
            f"both players are named {player1.name!r}; give one a different name (spec name=...)"
        )
    if not openings:
        raise LatentChessError("no openings to play")
    schedule = {r: openings[((r - 1) // 2) % len(openings)] for r in range(1, config.games + 1)}
    models: dict[str, tuple[str, str] | None] = {}
    done = _resume(pgn_path, player1, player2, config, schedule, models) if pgn_path else {}
    result = MatchResult(
        player1=player1.name,
        player2=player2.name,
        games=sorted(done.values(), key=_round),
        resumed=len(done),
        sprt=config.sprt,
    )
    todo = deque(r for r in schedule if r not in done)
    started = set(done)

    def next_round() -> int | None:
        """The next round to play: in order, or once the SPRT decided, only pairs' partners."""
        status = result.sprt_status()
        if status is None or status.decision is None:
            return todo.popleft() if todo else None
        for number in todo:
            if (number + 1 if number % 2 else number - 1) in started:
                todo.remove(number)
                return number
        return None

    first = next_round()
    if first is None:  # everything played, or a decided test: leave the PGN untouched
        return result
    todo.appendleft(first)
    chess960 = any(opening.chess960 for opening in openings)
    game = _Game(
        tag=new_tag("match"), player1=player1, player2=player2, config=config, chess960=chess960
    )
    own_pool = ThreadPool(config.workers) if pool is None else None
    runner: WorkPool = own_pool or pool  # type: ignore[assignment]
    progress = _progress(config, len(schedule), len(done), player1.name, player2.name)
    separator = _prepare_pgn(pgn_path)
    in_flight: dict[concurrent.futures.Future[GameRecord], int] = {}
    finished = False
    try:
        while True:
            slots = runner.slots
            while len(in_flight) < slots and (number := next_round()) is not None:
                started.add(number)
                in_flight[runner.submit(game, number, schedule[number])] = number
            if not in_flight:
                break
            ready, _ = concurrent.futures.wait(
                in_flight, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in sorted(ready, key=in_flight.__getitem__):
                del in_flight[future]
                record = future.result()
                _check_models(record, models, pgn_path)
                result.games.append(record)
                result.games.sort(key=_round)
                status = result.sprt_status()
                if status is not None:
                    record = dataclasses.replace(record, pgn=_sprt_tags(record.pgn, status))
                if pgn_path is not None:
                    append_text(pgn_path, separator + record.pgn + "\n\n", sync=True)
                    separator = ""
                if progress is not None:
                    wins, draws, losses = result.score
                    text = f"+{wins}={draws}-{losses} elo {result.elo()}"
                    progress.set_postfix_str(text + (f" {status.line()}" if status else ""))
                    progress.update(1)
                if on_game is not None:
                    on_game(record, result)
        finished = True
    finally:
        # On an error or Ctrl-C, games in flight are abandoned (cancelled on a cluster; here
        # their engines are closed under them); every game already written stays in the PGN.
        for future in in_flight:
            future.cancel()
        if own_pool is not None:
            own_pool.shutdown(wait=finished)
        if progress is not None:
            progress.close()
        runner.release(game.tag)
    return result


def _round(game: GameRecord) -> int:
    return game.round


def _sprt_tags(pgn: str, status: SprtStatus) -> str:
    """Add the ``SPRT`` and ``SPRTStatus`` tags at the end of a game's tag section."""
    decision = status.decision or "continue"
    tags = (
        f'[SPRT "{status.config.header()}"]\n'
        f'[SPRTStatus "{status.line()}, {status.pairs} pairs, '
        f'Ptnml(0-2) {" ".join(map(str, status.counts))}: {decision}"]\n'
    )
    head, blank, moves = pgn.partition("\n\n")
    if not blank:
        raise LatentChessError(f"game record without a tag section: {pgn[:80]!r}")
    return head + "\n" + tags.rstrip("\n") + blank + moves


def _progress(config: MatchConfig, total: int, initial: int, name1: str, name2: str) -> object:
    if not config.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=f"{name1} vs {name2}", unit="game")


def _prepare_pgn(path: str | Path | None) -> str:
    """Create the PGN (and its folder) before any game, so a path that cannot be written fails
    first; return what goes before the first game (a blank line after earlier text)."""
    if path is None:
        return ""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    needs_separator = path.exists() and path.stat().st_size > 0
    with path.open("ab"):
        pass
    return "\n" if needs_separator else ""


def _check_models(
    record: GameRecord,
    models: dict[str, tuple[str, str] | None],
    pgn_path: str | Path | None,
) -> None:
    """Refuse a game whose engines ran another model or precision than their player's earlier
    games (from the game's ``WhiteModelHash``/``WhitePrecision`` headers; none: no model)."""
    headers = chess.pgn.read_headers(io.StringIO(record.pgn))
    if headers is None:
        return  # a record without PGN text (tests' stand-ins): nothing to compare
    for side in ("White", "Black"):
        name = headers.get(side, "")
        model, precision = headers.get(f"{side}ModelHash"), headers.get(f"{side}Precision")
        got = None if model is None or precision is None else (model, precision)
        want = models.setdefault(name, got)
        if want == got:
            continue
        where = f"the games already in {str(pgn_path)!r}" if pgn_path else "its first game"
        raise LatentChessError(
            f"{name!r} now runs model {got[0] if got else None!r} at precision "
            f"{got[1] if got else None!r}, but {where} used model {want[0] if want else None!r} "
            f"at precision {want[1] if want else None!r}: mixing them would change what the "
            "score measures; use the same model and an explicit precision (e.g. "
            "precision=fp32), or another --event or PGN"
        )


def _resume(
    path: str | Path,
    player1: Player,
    player2: Player,
    config: MatchConfig,
    schedule: dict[int, Opening],
    models: dict[str, tuple[str, str] | None],
) -> dict[int, GameRecord]:
    """Finished rounds of this match already in ``path``; fills ``models`` from their headers.

    ``models`` maps a player to the ``(model hash, precision)`` its games were played with, for
    players whose games carry ``ModelHash`` headers.

    Raises:
        DataFormatError: a game disagrees with this run's schedule or limits, or one player's games
            were played with different models or precisions.
    """
    path = Path(path)
    if not path.exists():
        return {}
    done: dict[int, GameRecord] = {}
    names = {player1.name, player2.name}
    with open_text(path) as handle:
        while (h := chess.pgn.read_headers(handle)) is not None:
            if h.get("Event") != config.event or {h.get("White"), h.get("Black")} != names:
                continue
            if h.get("Result") not in ("1-0", "0-1", "1/2-1/2"):
                continue  # an unfinished game is played again
            try:
                number = int(h.get("Round", ""))
            except ValueError as error:
                raise DataFormatError(
                    f"game with bad Round {h.get('Round')!r}", path=path
                ) from error
            if number not in schedule:
                continue  # beyond this run's game count: kept in the file, not counted
            expected_white = player1.name if number % 2 == 1 else player2.name
            opening = schedule[number]
            start_fen = h.get("FEN", chess.STARTING_FEN)
            if (
                h.get("White") != expected_white
                or h.get("Opening") != opening.name
                or start_fen != opening.fen
            ):
                raise DataFormatError(
                    f"round {number} in the file ({h.get('White')} as White, opening "
                    f"{h.get('Opening')!r}) disagrees with this run's schedule ({expected_white} "
                    f"as White, opening {opening.name!r}): resume with the same openings and seed",
                    path=path,
                )
            recorded_sprt = h.get("SPRT")
            wanted_sprt = config.sprt.header() if config.sprt is not None else None
            if recorded_sprt is not None and recorded_sprt != wanted_sprt:
                raise DataFormatError(
                    f"round {number} in the file belongs to the SPRT {recorded_sprt!r}, this run "
                    f"{'tests ' + repr(wanted_sprt) if wanted_sprt else 'is no SPRT'}: changing "
                    "a sequential test's parameters midway voids its error rates (use another "
                    "--event or PGN)",
                    path=path,
                )
            # Games played under other limits are not this match's games: mixing them would
            # silently change what the score measures.
            limits = {player1.name: str(player1.limit), player2.name: str(player2.limit)}
            for side in ("White", "Black"):
                recorded = h.get(f"{side}Limit")
                if recorded is not None and recorded != limits[h[side]]:
                    raise DataFormatError(
                        f"round {number} in the file was played with {side} ({h[side]}) at "
                        f"limit {recorded!r}, this run gives it {limits[h[side]]!r}: resume with "
                        "the same limits (or use another --event or PGN)",
                        path=path,
                    )
            for side in ("White", "Black"):
                recorded = (h.get(f"{side}ModelHash"), h.get(f"{side}Precision"))
                if recorded[0] is None or recorded[1] is None:
                    continue  # not a latentchess model, or a file from before these headers
                known = models.setdefault(h[side], recorded)  # type: ignore[arg-type]
                if known != recorded:
                    raise DataFormatError(
                        f"{h[side]}'s games in the file were played with different models or "
                        f"precisions ({known!r} and, in round {number}, {recorded!r})",
                        path=path,
                    )
            done[number] = GameRecord(
                round=number,
                white=h["White"],
                black=h["Black"],
                result=h["Result"],
                termination=h.get("Termination", "?"),
                details=h.get("TerminationDetails", ""),
                plies=int(h.get("PlyCount", "0") or 0),
                opening=h.get("Opening", ""),
            )
    return done
