"""A cluster: named devices with their profiles and memory, and the links between them.

Links are directed: `bandwidth[i][j]` is bytes/s from device i (the sender, row) to
device j (the receiver, column), `latency[i][j]` the fixed seconds per transfer on it.
The diagonal is ignored (a tensor that stays on a device costs nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.importers.devices import DeviceProfile


@dataclass(frozen=True)
class Device:
    """One device of a cluster.

    Attributes:
        name: unique within the cluster, e.g. "gpu0".
        profile: peak rates used by the roofline cost model.
        memory: capacity in bytes available to the model.
    """

    name: str
    profile: DeviceProfile
    memory: float


@dataclass(frozen=True, eq=False)
class Cluster:
    """Devices and directed links (see the module docstring for the conventions).

    Attributes:
        devices: the devices, in the order the matrices use.
        bandwidth: (d, d) float64 bytes/s, row = sender; the diagonal is inf.
        latency: (d, d) float64 seconds per transfer; the diagonal is 0.
        name: a label (the file it came from, or an example's name).
    """

    devices: tuple[Device, ...]
    bandwidth: np.ndarray
    latency: np.ndarray
    name: str = "cluster"

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    @property
    def memory(self) -> np.ndarray:
        """(d,) bytes per device."""
        return np.array([d.memory for d in self.devices], dtype=np.float64)

    @property
    def profiles(self) -> list[DeviceProfile]:
        return [d.profile for d in self.devices]

    def index(self, name: str) -> int:
        """The position of a device by name."""
        return self.names.index(name)

    def transfer_time(self, nbytes, src: int, dst: int) -> float:
        """Seconds to move `nbytes` from device src to dst (0 when src == dst)."""
        if src == dst:
            return 0.0
        return float(self.latency[src, dst] + nbytes / self.bandwidth[src, dst])

    def transfer_matrix(self, nbytes: float) -> np.ndarray:
        """(d, d) seconds to move `nbytes` over every link (0 on the diagonal)."""
        t = self.latency + nbytes / self.bandwidth
        np.fill_diagonal(t, 0.0)
        return t

    @property
    def is_uniform(self) -> bool:
        """All devices alike (profile and memory) and all links alike."""
        d = self.num_devices
        off = ~np.eye(d, dtype=bool)
        same_dev = all(x.profile == self.devices[0].profile and x.memory == self.devices[0].memory
                       for x in self.devices)
        if d == 1:
            return True
        return bool(same_dev and np.all(self.bandwidth[off] == self.bandwidth[off][0])
                    and np.all(self.latency[off] == self.latency[off][0]))

    def to_dict(self) -> dict:
        """The JSON form `cluster_from_dict` reads (profiles by name, with overrides)."""
        devs = []
        for d in self.devices:
            entry = {"name": d.name, "profile": d.profile.name, "memory": d.memory}
            if d.profile.overrides:
                entry.update(d.profile.overrides)
            devs.append(entry)
        bw = self.bandwidth.copy()
        np.fill_diagonal(bw, 0.0)
        return {"name": self.name, "devices": devs, "bandwidth": bw.tolist(),
                "latency": self.latency.tolist()}
