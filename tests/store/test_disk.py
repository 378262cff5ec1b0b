from pathlib import Path

import pytest

from store.disk import LowDiskError, disk_status, ensure_free, free_mb


def test_free_space_is_read_from_the_nearest_existing_parent(tmp_path: Path) -> None:
    not_yet = tmp_path / "home" / "index"
    assert free_mb(not_yet) == free_mb(tmp_path) > 0
    assert disk_status(not_yet, 0) == "ok"


def test_too_little_space_is_a_clear_error_naming_the_setting(tmp_path: Path) -> None:
    need = free_mb(tmp_path) + 10**9
    with pytest.raises(LowDiskError, match=r"not enough disk space \(\d+ MB free under .*CAIRN_MIN_FREE_DISK_MB"):
        ensure_free(tmp_path, need)
    ensure_free(tmp_path, 1)
