"""The trusted side of the foot and knee primitives: readings MuJoCo has and qpos does not.

`BodySensors(model)` finds the env's foot geoms, knee bodies and named parts once; `read(data)`
gives each step's `feet_z` (the lowest point of each foot geom above the floor), `feet_contact`
(1 when the foot geom touches the floor), `knees_z` and `parts_pos` (x, y, z of each named part
of the layout, one row after another: head and hands at their centre, feet at their lowest
point, knees at the joint), copied into info for the reward and recorded in evaluation
trajectories for the judge.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from activities.behaviours.layout import layout

FLOOR = "floor"


class BodySensors:
    """Foot and knee readings for one env's model (an env without feet reads nothing)."""

    def __init__(self, env_id: str, model: Any) -> None:
        lay = layout(env_id)
        self.feet = np.array([self._id(model, mujoco.mjtObj.mjOBJ_GEOM, g) for g in lay.feet], int)
        # A knee is the hinge that joins the shin to the thigh: the first joint of the shin
        # body, whose anchor is the knee (the body's own origin is not, on Hopper and Walker2d).
        bodies = [self._id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in lay.knees]
        self.knees = np.array([model.body_jntadr[b] for b in bodies], int)
        self.floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, FLOOR)
        # Capsules lie along their local z: half-length size[1], radius size[0]; a sphere has
        # no length.
        sizes = model.geom_size[self.feet] if len(self.feet) else np.zeros((0, 3))
        capsule = model.geom_type[self.feet] == mujoco.mjtGeom.mjGEOM_CAPSULE
        self.radius = sizes[:, 0].copy()
        self.half_length = np.where(capsule, sizes[:, 1], 0.0)
        self._parts(model, lay.parts)

    def _parts(self, model: Any, parts: dict[str, tuple[str, str]]) -> None:
        """Index the named parts: geoms (feet lowered to their lowest point) and knee joints."""
        self.n_parts = len(parts)
        geoms, lows, halves, rows, knees, knee_rows = [], [], [], [], [], []
        for row, (kind, name) in enumerate(parts.values()):
            if kind == "knee":
                body = self._id(model, mujoco.mjtObj.mjOBJ_BODY, name)
                knees.append(int(model.body_jntadr[body]))
                knee_rows.append(row)
                continue
            geom = self._id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
            capsule = model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_CAPSULE
            geoms.append(geom)
            rows.append(row)
            lows.append(float(model.geom_size[geom][0]) if kind == "foot" else 0.0)
            halves.append(float(model.geom_size[geom][1]) if kind == "foot" and capsule else 0.0)
        self.part_geoms, self.part_rows = np.array(geoms, int), np.array(rows, int)
        self.part_radius, self.part_half = np.array(lows), np.array(halves)
        self.part_knees, self.knee_rows = np.array(knees, int), np.array(knee_rows, int)

    @staticmethod
    def _id(model: Any, kind: Any, name: str) -> int:
        found = mujoco.mj_name2id(model, kind, name)
        if found < 0:
            raise ValueError(f"the model has no {name!r}")
        return int(found)

    @property
    def empty(self) -> bool:
        return not len(self.feet) and not len(self.knees) and not self.n_parts

    def read(self, data: Any) -> dict[str, np.ndarray]:
        """This step's readings (new arrays), keyed as the primitives expect them."""
        out: dict[str, np.ndarray] = {}
        if len(self.feet):
            centre_z = data.geom_xpos[self.feet, 2]
            axis_z = np.abs(data.geom_xmat[self.feet, 8])  # world z of each geom's local z axis
            out["feet_z"] = centre_z - axis_z * self.half_length - self.radius
            pairs = data.contact.geom  # (ncon, 2), a view over the active contacts
            with_floor = pairs[(pairs == self.floor).any(axis=1)].ravel()
            # A broadcast compare: np.isin sorts, ten times slower on these few elements.
            touching = (self.feet[:, None] == with_floor[None, :]).any(axis=1).astype(np.float64)
            out["feet_contact"] = touching
        if len(self.knees):
            out["knees_z"] = data.xanchor[self.knees, 2].copy()
        if self.n_parts:
            pos = np.zeros((self.n_parts, 3))
            if len(self.part_geoms):
                at = data.geom_xpos[self.part_geoms].copy()
                axis_z = np.abs(data.geom_xmat[self.part_geoms, 8])
                at[:, 2] -= axis_z * self.part_half + self.part_radius
                pos[self.part_rows] = at
            if len(self.part_knees):
                pos[self.knee_rows] = data.xanchor[self.part_knees]
            out["parts_pos"] = pos.ravel()  # flat: the sandbox passes info arrays as vectors
        return out
