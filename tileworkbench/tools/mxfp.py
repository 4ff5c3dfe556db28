"""Host-side microscaling (OCP MX v1.0) data on torch tensors, with the names of Triton's
`triton.tools.mxfp`: `MXFP4Tensor` holds fp4 e2m1 codes (one per uint8, or two per byte when packed),
`MXScaleTensor` holds e8m0 block scales. Kernels read them through `tl.dot_scaled`. Needs torch."""

from __future__ import annotations

import torch

# The eight e2m1 magnitudes, indexed by the code's low three bits (exponent << 1 | mantissa): the
# exponent bias is 1, exponent 0 is subnormal (0 or 0.5). Bit 3 is the sign. No Inf or NaN codes.
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E8M0_BIAS = 127
E8M0_NAN = 255


class MXFP4Tensor:
    """fp4 e2m1 numbers, one code per uint8 (`data`), from float32 numbers or random.

    Args:
        data: float32 numbers to round to e2m1 (ties to even; beyond 6 and Inf/NaN clamp to +-6).
        size: the shape of a tensor to fill later with `random()`.
        device: where `random()` puts the codes (with `data`, its device).
    """

    def __init__(self, data: torch.Tensor | None = None, size=None, device=None):
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"MXFP4Tensor: data must be a torch tensor, got {type(data)}")
            self.device = data.device
            self.data = _e2m1_codes(data)
        elif size is not None:
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        else:
            raise ValueError("MXFP4Tensor: give data (float32 numbers) or size")

    def random(self) -> MXFP4Tensor:
        """Every code (sign, exponent, mantissa) uniformly at random; returns self."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype) -> torch.Tensor:
        """The numbers as float32 (the only dtype: every e2m1 value is one exactly)."""
        if dtype != torch.float32:
            raise ValueError(f"MXFP4Tensor.to: only torch.float32, got {dtype}")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        magnitude = table[(self.data & 7).long()]
        return torch.where((self.data & 8) != 0, -magnitude, magnitude)

    def to_packed_tensor(self, dim: int) -> torch.Tensor:
        """Two codes per byte along `dim` (element 2i in the low nibble, 2i+1 in the high one); an
        odd length is padded with a zero code."""
        data = self.data
        if not 0 <= dim < data.ndim:
            raise ValueError(
                f"MXFP4Tensor.to_packed_tensor: dim {dim} is not a dimension of a "
                f"{data.ndim}-D tensor"
            )
        if data.shape[dim] % 2:
            pad = [0] * (2 * (data.ndim - dim - 1)) + [0, 1]
            data = torch.nn.functional.pad(data, pad)
        pairs = data.unflatten(dim, (data.shape[dim] // 2, 2))
        return pairs.select(dim + 1, 0) | (pairs.select(dim + 1, 1) << 4)

    def unpack_packed_tensor(
        self, packed_tensor: torch.Tensor, dim: int, original_shape
    ) -> torch.Tensor:
        """The codes of `packed_tensor` (packed along `dim` by `to_packed_tensor`), one per uint8,
        cut to `original_shape`'s length along `dim`."""
        pairs = torch.stack((packed_tensor & 0xF, (packed_tensor >> 4) & 0xF), dim=dim + 1)
        data = pairs.flatten(dim, dim + 1)
        return data.narrow(dim, 0, original_shape[dim]).to(torch.uint8)


def _e2m1_codes(values: torch.Tensor) -> torch.Tensor:
    """float32 -> e2m1 codes: nearest magnitude, ties to the even mantissa, clamped to 6; the sign
    kept (so values that round to 0 give a signed zero)."""
    magnitudes = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=values.device)
    midpoints = (magnitudes[1:] + magnitudes[:-1]) / 2
    size = values.abs().float()
    size = torch.where(torch.isnan(size), magnitudes[-1], size)  # NaN clamps as Inf does
    below = torch.bucketize(size, midpoints, right=False)  # a tie goes to the lower neighbour
    above = torch.bucketize(size, midpoints, right=True)  # ... or to the upper
    index = torch.where(below % 2 == 0, below, above)  # even index = even mantissa bit
    sign = torch.signbit(values).to(torch.uint8) << 3
    return sign | index.to(torch.uint8)


class MXScaleTensor:
    """e8m0 block scales (2**(e - 127), 255 is NaN), one per uint8 (`data`).

    Args:
        data: float32 scales to round down to powers of two (values <= 0, Inf and NaN give NaN).
        size: the shape of a tensor to fill later with `random()`.
        device: where `random()` puts the scales (with `data`, its device).
    """

    def __init__(self, data: torch.Tensor | None = None, size=None, device=None):
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"MXScaleTensor: data must be a torch tensor, got {type(data)}")
            self.device = data.device
            self.data = _e8m0_codes(data)
        elif size is not None:
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        else:
            raise ValueError("MXScaleTensor: give data (float32 scales) or size")

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Random scales between `low` and `high` (powers of two, both rounded down; default the
        whole range, without the NaN code); returns self."""
        lowest = 0 if low is None else max(0, _exponent(low) + E8M0_BIAS)
        highest = 254 if high is None else min(254, max(0, _exponent(high) + E8M0_BIAS))
        if lowest > highest:
            raise ValueError(f"MXScaleTensor.random: low {low} is above high {high}")
        self.data = torch.randint(
            lowest, highest + 1, self.size, dtype=torch.uint8, device=self.device
        )
        return self

    def to(self, dtype) -> torch.Tensor:
        """The scales as float32 (NaN for the code 255)."""
        if dtype != torch.float32:
            raise ValueError(f"MXScaleTensor.to: only torch.float32, got {dtype}")
        exponent = self.data.to(torch.int32) - E8M0_BIAS
        value = torch.pow(torch.tensor(2.0, device=self.data.device), exponent.float())
        return torch.where(self.data == E8M0_NAN, float("nan"), value)


def _exponent(value: float) -> int:
    """floor(log2(value)) of a positive number, exactly."""
    return int(torch.frexp(torch.tensor(float(value), dtype=torch.float64)).exponent) - 1


def _e8m0_codes(values: torch.Tensor) -> torch.Tensor:
    """float32 -> e8m0: floor(log2 v) + 127 clamped to 0..254 (exact, from the float's exponent);
    values <= 0, Inf and NaN give 255."""
    values = values.float()
    invalid = ~torch.isfinite(values) | (values <= 0)
    exponent = torch.frexp(torch.where(invalid, 1.0, values)).exponent - 1
    codes = torch.clamp(exponent + E8M0_BIAS, 0, 254).to(torch.uint8)
    return torch.where(
        invalid, torch.tensor(E8M0_NAN, dtype=torch.uint8, device=values.device), codes
    )
