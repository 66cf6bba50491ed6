"""The torch release check that runs before dtrain's extension loads: a torch outside the
supported range, or another release than the build's, is one ImportError naming both versions."""
import pytest

from dtrain import _build_info
from dtrain._version_check import check_torch


def _release(version: str) -> tuple:
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2])


OLDEST, NEWEST = (_release(v) for v in _build_info.SUPPORTED_TORCH)
BUILT = _release(_build_info.TORCH_VERSION)


def test_the_torch_built_against_passes_with_any_patch_and_local_version():
    check_torch(f"{BUILT[0]}.{BUILT[1]}.0")
    check_torch(f"{BUILT[0]}.{BUILT[1]}.7+cu130")


@pytest.mark.parametrize("imported", [f"{OLDEST[0]}.{OLDEST[1] - 1}.0", f"{NEWEST[0]}.{NEWEST[1] + 1}.0", "1.13.1"])
def test_a_torch_outside_the_supported_range_names_the_range_and_the_version(imported):
    with pytest.raises(ImportError) as raised:
        check_torch(imported)
    message = str(raised.value)
    assert imported in message and _build_info.SUPPORTED_TORCH[0] in message and _build_info.SUPPORTED_TORCH[1] in message
    assert "\n" not in message


def test_another_supported_release_than_the_build_names_both_versions():
    others = [minor for minor in range(OLDEST[1], NEWEST[1] + 1) if (OLDEST[0], minor) != BUILT]
    imported = f"{OLDEST[0]}.{others[0]}.0"
    with pytest.raises(ImportError) as raised:
        check_torch(imported)
    message = str(raised.value)
    assert imported in message and _build_info.TORCH_VERSION in message and "rebuild" in message
