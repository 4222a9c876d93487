"""The converter is unpacked from the llama-cpp-python sdist on Debian 12's Python.

`TarFile.extractall(..., filter="data")` exists only from Python 3.11.4; Debian 12
ships 3.11.2, where the set-up used to fail after the half-hour llama.cpp build.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from oracle import gguf_export

PREFIX = f"{gguf_export._SDIST_NAME}/vendor/llama.cpp/"


def _sdist(cache: Path, extra: dict[str, bytes] | None = None) -> None:
    files = {
        PREFIX + "convert_hf_to_gguf.py": b"print('converter')\n",
        PREFIX + "gguf-py/gguf/__init__.py": b"",
        PREFIX + "src/llama.cpp": b"not wanted",
        **(extra or {}),
    }
    (cache / "sdist").mkdir(parents=True)
    with tarfile.open(
        cache / "sdist" / f"{gguf_export._SDIST_NAME}.tar.gz", "w:gz"
    ) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def python_3_11_2(monkeypatch):
    """tarfile as Python 3.11.2 has it: no data_filter, no `filter` argument."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    plain = tarfile.TarFile.extractall

    def extractall(self, path=".", members=None, *, numeric_owner=False, **kw):
        if kw:
            raise TypeError(
                f"extractall() got an unexpected keyword argument {next(iter(kw))!r}"
            )
        return plain(self, path, members, numeric_owner=numeric_owner, **kw)

    monkeypatch.setattr(tarfile.TarFile, "extractall", extractall)


def test_the_converter_unpacks_without_tar_filters(tmp_path, python_3_11_2):
    _sdist(tmp_path)
    out = gguf_export.converter_dir(tmp_path)
    assert (out / "convert_hf_to_gguf.py").read_bytes() == b"print('converter')\n"
    assert (out / "gguf-py" / "gguf" / "__init__.py").is_file()
    assert not (out / "src").exists()  # only the converter's files


def test_a_member_escaping_the_folder_is_refused(tmp_path, python_3_11_2):
    _sdist(tmp_path, {PREFIX + "conversion/../../../evil.py": b"x"})
    with pytest.raises(ValueError, match="refusing to extract"):
        gguf_export.converter_dir(tmp_path)
    assert not (tmp_path.parent / "evil.py").exists()
