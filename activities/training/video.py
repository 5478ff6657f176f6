"""Videos of recorded episodes, drawn from their states on one or more threads: child only.

An episode's trajectory holds the state after each step (qpos, qvel), so its video needs
neither the policy nor the reward: each frame sets a state and draws it. Frames are drawn
round-robin by `threads` renderers (each its own env, GL context and MuJoCo data: MuJoCo and
Mesa release the GIL while drawing) and encoded in order by the calling thread.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import mujoco
import numpy as np

from activities.training.sim import TRACKING_CAMERA, make_env, mujoco_env

MAX_VIDEO_FPS = 30
# Frames each renderer may draw ahead of the encoder (a 480 px frame is 0.7 MB).
AHEAD = 4
# Making a renderer (its GL context) takes about the CPU of 50 frames at 480 px, 100 at 240.
FRAMES_PER_RENDERER = 100


def video_stride(dt: float) -> tuple[int, int]:
    """(render every n-th step, fps) so the video plays in real time at <= MAX_VIDEO_FPS."""
    stride = max(1, math.ceil((1.0 / dt) / MAX_VIDEO_FPS))
    return stride, max(1, round(1.0 / (dt * stride)))


class StateRenderer:
    """Draws an episode's states as the evaluation video shows them (`make_env`'s size, camera
    and settings). Lives on the thread that made it: its GL context is current there."""

    def __init__(
        self, env_id: str, size: int, seed: int, env_kwargs: dict[str, Any] | None = None
    ) -> None:
        self.env = make_env(env_id, None, env_kwargs, render_size=size)
        self.reseed(seed)
        sim = mujoco_env(self.env)
        self.model, self.data = sim.model, sim.data
        # The tracking camera through MuJoCo's own renderer: the same pixels as the env's
        # render() (a test compares them) without reading back a depth image (~10% of a frame).
        own_camera = {"camera_id", "camera_name"} & set(env_kwargs or {})
        self._fast = (
            mujoco.Renderer(self.model, size, size)
            if env_id in TRACKING_CAMERA and not own_camera
            else None
        )

    def reseed(self, seed: int) -> None:
        """Reset to the state an episode reset with `seed` started from (for `reset_frame`)."""
        self.env.reset(seed=seed)

    def reset_frame(self) -> np.ndarray:
        """The frame of the state the episode started from (after reset with its seed)."""
        return self._draw()

    def frame(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """The frame of one recorded state."""
        self.data.qpos[:] = qpos
        self.data.qvel[:] = qvel
        mujoco.mj_forward(self.model, self.data)
        return self._draw()

    def _draw(self) -> np.ndarray:
        if self._fast is None:
            return np.asarray(self.env.render())
        self._fast.update_scene(self.data, camera="track")
        return self._fast.render()

    def close(self) -> None:
        if self._fast is not None:
            self._fast.close()
        self.env.close()


def frame_steps(length: int, stride: int, max_frames: int | None) -> list[int | None]:
    """Which recorded step each frame draws: None for the reset state, then every stride-th
    step (as rendering while playing did), at most `max_frames` of those after the first."""
    steps: list[int | None] = [None, *range(stride - 1, length, stride)]
    return steps if max_frames is None else steps[: max_frames + 1]


@dataclass(frozen=True)
class Clip:
    """One recorded episode to draw: reset with `seed`, then its states (`frame_steps`)."""

    seed: int
    arrays: dict[str, np.ndarray]
    path: Path
    max_frames: int | None = None

    def steps(self) -> list[int | None]:
        stride, _ = video_stride(float(self.arrays["meta_dt"]))
        return frame_steps(len(self.arrays["qpos"]), stride, self.max_frames)


def _draw_share(
    make: Callable[[], StateRenderer],
    clips: list[Clip],
    steps: list[list[int | None]],
    k: int,
    threads: int,
    out: queue.Queue[np.ndarray | BaseException],
) -> None:
    """Renderer k's frames of every clip (its `steps` k, k + threads, ...), in order, into
    `out`."""
    renderer = None
    try:
        renderer = make()
        for clip, clip_steps in zip(clips, steps, strict=True):
            renderer.reseed(clip.seed)
            qpos, qvel = clip.arrays["qpos"], clip.arrays["qvel"]
            for t in clip_steps[k::threads]:
                out.put(renderer.reset_frame() if t is None else renderer.frame(qpos[t], qvel[t]))
    except BaseException as exc:  # noqa: BLE001 - handed to the encoding thread, which raises it
        out.put(exc)
    finally:
        if renderer is not None:
            renderer.close()


def _in_order(
    queues: list[queue.Queue[np.ndarray | BaseException]], n: int
) -> Iterator[np.ndarray]:
    for i in range(n):
        item = queues[i % len(queues)].get()
        if isinstance(item, BaseException):
            raise item
        yield item


def render_video(
    env_id: str,
    seed: int,
    arrays: dict[str, np.ndarray],
    path: Path,
    *,
    size: int,
    max_frames: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    threads: int = 1,
    frames_per_renderer: int = FRAMES_PER_RENDERER,
) -> int:
    """The mp4 of a recorded episode (reset with `seed`, then its states; at most `max_frames`
    after the first), real-time at most MAX_VIDEO_FPS; the number of frames written."""
    return render_videos(
        env_id,
        [Clip(seed, arrays, path, max_frames)],
        size=size,
        env_kwargs=env_kwargs,
        threads=threads,
        frames_per_renderer=frames_per_renderer,
    )[0]


def render_videos(
    env_id: str,
    clips: list[Clip],
    *,
    size: int,
    env_kwargs: dict[str, Any] | None = None,
    threads: int = 1,
    frames_per_renderer: int = FRAMES_PER_RENDERER,
) -> list[int]:
    """`render_video` for several clips of one env, one after another, by the same renderers
    (at most `threads`, each with `frames_per_renderer` frames or more to draw): making one, its
    GL context, costs as much CPU as drawing 50 to 100 frames. The frames written to each."""
    steps = [clip.steps() for clip in clips]
    threads = max(1, min(threads, sum(map(len, steps)) // max(1, frames_per_renderer)))
    queues: list[queue.Queue[np.ndarray | BaseException]] = [
        queue.Queue(maxsize=AHEAD) for _ in range(threads)
    ]
    workers = [
        threading.Thread(
            target=_draw_share,
            args=(
                lambda: StateRenderer(env_id, size, clips[0].seed, env_kwargs),
                clips,
                steps,
                k,
                threads,
                queues[k],
            ),
            name=f"render-{k}",
            daemon=True,
        )
        for k in range(threads)
    ]
    for worker in workers:
        worker.start()
    written: list[int] = []
    try:
        for clip, clip_steps in zip(clips, steps, strict=True):
            _, fps = video_stride(float(clip.arrays["meta_dt"]))
            writer = Mp4Writer(clip.path, fps)
            try:
                for frame in _in_order(queues, len(clip_steps)):
                    writer.add(frame)
            finally:
                writer.close()
            written.append(writer.frames)
    finally:
        _drain(queues, workers)
    return written


def _drain(queues: list[queue.Queue[Any]], workers: list[threading.Thread]) -> None:
    """Let every renderer finish (after an error they may wait on a full queue)."""
    for worker, q in zip(workers, queues, strict=True):
        while worker.is_alive():
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)
        worker.join()


class Mp4Writer:
    """H.264 mp4 written frame by frame: a 1000-step rollout never holds all frames in memory."""

    def __init__(self, path: Path, fps: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fps = fps
        self.frames = 0
        self._container: Any = None
        self._stream: Any = None

    def add(self, frame: np.ndarray) -> None:
        """Encode one RGB frame (the first fixes the size, cropped to even sides)."""
        if self._container is None:
            h, w = frame.shape[:2]
            self._container = av.open(str(self.path), mode="w")
            self._stream = self._container.add_stream("libx264", rate=self.fps)
            self._stream.width, self._stream.height = w - w % 2, h - h % 2  # yuv420p: even
            self._stream.pix_fmt = "yuv420p"
            # superfast, not veryfast: at the same crf it spends more bits for the same or
            # better picture (480 px HalfCheetah: PSNR 37.9 dB against 36.6, files 1.5x) in
            # 60% of the encoding time, which is on the session's critical path.
            self._stream.options = {"crf": "23", "preset": "superfast"}
        stream = self._stream
        img = av.VideoFrame.from_ndarray(
            np.ascontiguousarray(frame[: stream.height, : stream.width]), format="rgb24"
        )
        for packet in stream.encode(img):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        """Flush the encoder and finish the file (nothing was written without a frame)."""
        if self._container is None:
            return
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        self._container = None
