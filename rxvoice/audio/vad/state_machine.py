"""The VAD debounce state machine, pure: no audio, no model, no clock.

It turns a sequence of per-window "is this speech?" decisions into the four
:class:`~rxvoice.audio.vad.params.VADState` values, exactly as Pipecat's
analyzer does:

* Window counts come from seconds with Python's ``round`` (halves to even):
  ``start_windows = round(start_secs / window_secs)``; with 32 ms windows the
  0.2 s defaults give 6 windows each.
* Per window (:meth:`VADStateMachine.update`): QUIET + speech → STARTING
  (count 1); STARTING + speech → count + 1; STARTING + silence → QUIET;
  SPEAKING + silence → STOPPING (count 1); STOPPING + silence → count + 1;
  STOPPING + speech → SPEAKING.
* Promotion is checked once per analyzed chunk, after all its windows
  (:meth:`VADStateMachine.settle`): STARTING with count ≥ start_windows →
  SPEAKING; STOPPING with count ≥ stop_windows → QUIET. So one chunk holding
  five speech windows and one silent window ends QUIET, never SPEAKING.

Time is counted in windows (i.e. samples), never read from a clock, so a
replayed recording gives the same states at any speed.
"""

from __future__ import annotations

from .params import VADParams, VADState

__all__ = ["VADStateMachine", "window_count"]


def window_count(secs: float, window_samples: int, sample_rate: int) -> int:
    """Windows needed to cover ``secs``, rounded like Pipecat (half to even)."""
    return round(secs / (window_samples / sample_rate))


class VADStateMachine:
    """Debounce counters and the current state; see the module docstring."""

    __slots__ = ("start_windows", "starting_count", "state", "stop_windows", "stopping_count")

    def __init__(self, start_windows: int, stop_windows: int) -> None:
        """Start QUIET with the given window counts for start and stop."""
        self.start_windows = start_windows
        self.stop_windows = stop_windows
        self.state = VADState.QUIET
        self.starting_count = 0
        self.stopping_count = 0

    @classmethod
    def for_params(
        cls, params: VADParams, window_samples: int, sample_rate: int
    ) -> VADStateMachine:
        """A machine whose counts follow ``params`` for this window size and rate."""
        return cls(
            window_count(params.start_secs, window_samples, sample_rate),
            window_count(params.stop_secs, window_samples, sample_rate),
        )

    def update(self, speaking: bool) -> None:
        """Apply one window's decision (no promotion: see :meth:`settle`)."""
        state = self.state
        if speaking:
            if state is VADState.QUIET:
                self.state = VADState.STARTING
                self.starting_count = 1
            elif state is VADState.STARTING:
                self.starting_count += 1
            elif state is VADState.STOPPING:
                self.state = VADState.SPEAKING
                self.stopping_count = 0
        elif state is VADState.STARTING:
            self.state = VADState.QUIET
            self.starting_count = 0
        elif state is VADState.SPEAKING:
            self.state = VADState.STOPPING
            self.stopping_count = 1
        elif state is VADState.STOPPING:
            self.stopping_count += 1

    def settle(self) -> VADState:
        """Promote STARTING/STOPPING once their counts are reached; return the state."""
        state = self.state
        if state is VADState.STARTING and self.starting_count >= self.start_windows:
            self.state = VADState.SPEAKING
            self.starting_count = 0
        elif state is VADState.STOPPING and self.stopping_count >= self.stop_windows:
            self.state = VADState.QUIET
            self.stopping_count = 0
        return self.state

    def reset(self) -> None:
        """Back to QUIET with zero counts."""
        self.state = VADState.QUIET
        self.starting_count = 0
        self.stopping_count = 0
