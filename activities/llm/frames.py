"""Frames for a vision-language judge: evenly spaced JPEGs from an evaluation video, each with
its time in the episode."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import av
import numpy as np
from PIL import Image

# Models that take images but not video see at least this many frames of an episode (8 left
# 1.9 s between frames on a 15 s Humanoid episode), about one a second on longer ones, and at
# most MAX_FRAMES (a 50 s HalfCheetah episode: one every 1.6 s) to bound the tokens.
MIN_FRAMES = 16
MAX_FRAMES = 32


@dataclass(frozen=True)
class Frame:
    """One frame as a JPEG, and when in the episode it was drawn (seconds from the start)."""

    time_s: float
    jpeg: bytes


@dataclass(frozen=True)
class Frames:
    """Frames picked from a video, and how long the whole video lasts."""

    frames: list[Frame]
    duration_s: float
    fps: float


def frames_for(duration_s: float, asked: int = MIN_FRAMES) -> int:
    """How many frames to show of an episode this long: about one a second, never fewer than
    MIN_FRAMES (or `asked`, if more) and never more than MAX_FRAMES."""
    return min(max(asked, MIN_FRAMES, math.ceil(duration_s)), MAX_FRAMES)


def video_length(mp4: bytes) -> tuple[float, float]:
    """(seconds from the first frame to the last, frames per second), read without decoding."""
    with av.open(io.BytesIO(mp4), mode="r") as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or 30)
        count = sum(1 for packet in container.demux(stream) if packet.size)
    return max(count - 1, 0) / fps, fps


def timed_frames(
    mp4: bytes,
    n: int | None = None,
    size: int = 384,
    start_s: float | None = None,
    end_s: float | None = None,
    at_least: int = MIN_FRAMES,
) -> Frames:
    """n frames spread over the video, or over [start_s, end_s] of it (first and last
    included), as JPEGs no wider or taller than `size`, with their times: what models that take
    images but not video are shown. n None: `frames_for` the video's length (at least
    `at_least`). Videos play in
    real time (the renderer's fps is 1 / (dt * stride)), so seconds here are episode seconds."""
    with av.open(io.BytesIO(mp4), mode="r") as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or 30)
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    if not decoded:
        raise ValueError("the video has no frames")
    duration = (len(decoded) - 1) / fps
    first = 0 if start_s is None else int(round(start_s * fps))
    last = len(decoded) - 1 if end_s is None else int(round(end_s * fps))
    first, last = max(first, 0), min(last, len(decoded) - 1)
    if last < first:
        raise ValueError(
            f"the window {start_s or 0:g}-{end_s if end_s is not None else duration:g} s holds "
            f"no frames; the video lasts {duration:.2f} s"
        )
    count = frames_for(duration, at_least) if n is None else n
    picks = np.linspace(first, last, num=min(count, last - first + 1)).round().astype(int)
    out = []
    for i in picks:
        image = Image.fromarray(decoded[int(i)])
        image.thumbnail((size, size))
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=85)
        out.append(Frame(time_s=round(int(i) / fps, 2), jpeg=buf.getvalue()))
    return Frames(out, duration, fps)
