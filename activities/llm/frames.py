"""Frames for a vision-language judge: evenly spaced JPEGs from an evaluation video."""

from __future__ import annotations

import io

import av
import numpy as np
from PIL import Image


def sample_frames(
    mp4: bytes,
    n: int = 8,
    size: int = 384,
    start_s: float | None = None,
    end_s: float | None = None,
) -> list[bytes]:
    """n frames spread over the video, or over [start_s, end_s] of it (first and last
    included), as JPEG bytes no wider or taller than `size`: what models that take images but
    not video are shown. Videos play in real time, so seconds here are episode seconds."""
    with av.open(io.BytesIO(mp4), mode="r") as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or 30)
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    if not frames:
        raise ValueError("the video has no frames")
    first = 0 if start_s is None else int(round(start_s * fps))
    last = len(frames) - 1 if end_s is None else int(round(end_s * fps))
    first, last = max(first, 0), min(last, len(frames) - 1)
    if last < first:
        length = (len(frames) - 1) / fps
        raise ValueError(
            f"the window {start_s or 0:g}-{end_s if end_s is not None else length:g} s holds "
            f"no frames; the video lasts {length:.2f} s"
        )
    picks = np.linspace(first, last, num=min(n, last - first + 1)).round().astype(int)
    out = []
    for i in picks:
        image = Image.fromarray(frames[int(i)])
        image.thumbnail((size, size))
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=85)
        out.append(buf.getvalue())
    return out
