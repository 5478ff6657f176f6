"""Frames for a vision-language judge: evenly spaced JPEGs from an evaluation video."""

from __future__ import annotations

import io

import av
import numpy as np
from PIL import Image


def sample_frames(mp4: bytes, n: int = 8, size: int = 384) -> list[bytes]:
    """n frames spread over the whole video (first and last included), as JPEG bytes no wider
    or taller than `size`: what models that take images but not video are shown."""
    with av.open(io.BytesIO(mp4)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    if not frames:
        raise ValueError("the video has no frames")
    picks = np.linspace(0, len(frames) - 1, num=min(n, len(frames))).round().astype(int)
    out = []
    for i in picks:
        image = Image.fromarray(frames[int(i)])
        image.thumbnail((size, size))
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=85)
        out.append(buf.getvalue())
    return out
