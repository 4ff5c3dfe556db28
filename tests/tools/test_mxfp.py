"""tileworkbench.tools.mxfp (Triton's triton.tools.mxfp names): e2m1 codes from floats (every
code's value, ties to even, clamping, signed zeros), packing two per byte and back, e8m0 scales,
checked against NumPy float64 and ml_dtypes' float4_e2m1fn."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tileworkbench.tools.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402


def test_every_e2m1_code_has_its_ocp_value():
    codes = torch.arange(16, dtype=torch.uint8)
    tensor = MXFP4Tensor(size=(16,))
    tensor.data = codes
    want = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    values = tensor.to(torch.float32).numpy()
    np.testing.assert_array_equal(values, want)
    np.testing.assert_array_equal(np.signbit(values), np.arange(16) >= 8)
    np.testing.assert_array_equal(_e2m1_values(np.arange(16)), want)


def _e2m1_values(codes: np.ndarray) -> np.ndarray:
    """The numbers of e2m1 codes, through ml_dtypes (independent of the module under test)."""
    return codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def test_rounding_from_float_matches_ml_dtypes():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(-8, 8, 2000), np.arange(-7, 7.01, 0.25),  # ties
                             [0.0, -0.0, 0.1, -0.1, 100.0, -1e30]]).astype(np.float32)
    codes = MXFP4Tensor(torch.from_numpy(values)).data.numpy()
    assert codes.max() < 16
    ours = _e2m1_values(codes)
    want = np.clip(values, -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float64)
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(values))  # -0.1 -> -0


def test_nan_and_inf_clamp_to_six():
    values = torch.tensor([float("nan"), float("inf"), -float("inf")])
    np.testing.assert_array_equal(MXFP4Tensor(values).to(torch.float32).numpy(), [6, 6, -6])


@pytest.mark.parametrize("shape, dim", [((4, 6), 1), ((5, 3), 0), ((3, 7), 1), ((2, 3, 4), 2)])
def test_pack_and_unpack(shape, dim):
    tensor = MXFP4Tensor(size=shape).random()
    packed = tensor.to_packed_tensor(dim)
    assert packed.dtype == torch.uint8 and packed.shape[dim] == (shape[dim] + 1) // 2
    low = tensor.data.narrow(dim, 0, shape[dim] // 2 * 2).unflatten(dim, (-1, 2))
    body = packed.narrow(dim, 0, shape[dim] // 2)
    assert torch.equal(body & 0xF, low.select(dim + 1, 0))  # element 2i low, 2i+1 high
    assert torch.equal(body >> 4, low.select(dim + 1, 1))
    assert torch.equal(tensor.unpack_packed_tensor(packed, dim, shape), tensor.data)


def test_random_codes_cover_all_sixteen():
    torch.manual_seed(1)
    data = MXFP4Tensor(size=(4000,), device="cpu").random().data
    assert data.dtype == torch.uint8 and set(data.unique().tolist()) == set(range(16))


def test_scales_round_down_to_powers_of_two():
    values = torch.tensor([1.0, 1.5, 0.75, 3e-39, 2.0**-127, 2.0**127 * 1.9, 0.0, -1.0,
                           float("nan"), float("inf"), 1e-45])
    scale = MXScaleTensor(values)
    want = [127, 127, 126, 0, 0, 254, 255, 255, 255, 255, 0]
    assert scale.data.tolist() == want
    back = scale.to(torch.float32).numpy().astype(np.float64)
    expected = np.where(np.array(want) == 255, np.nan, 2.0 ** (np.array(want, float) - 127))
    np.testing.assert_array_equal(back, expected)


def test_random_scales_stay_in_range():
    torch.manual_seed(2)
    data = MXScaleTensor(size=(3000,)).random(low=0.25, high=8.0).data
    assert data.min() == 125 and data.max() == 130
    with pytest.raises(ValueError, match="above high"):
        MXScaleTensor(size=(2,)).random(low=4.0, high=1.0)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="give data"):
        MXFP4Tensor()
    with pytest.raises(ValueError, match="only torch.float32"):
        MXFP4Tensor(size=(2,)).random().to(torch.float16)
    with pytest.raises(ValueError, match="dim 2"):
        MXFP4Tensor(size=(2, 2)).random().to_packed_tensor(2)
