"""The CPU's features, read at run time, and the dtype ``auto`` picks from them."""

from __future__ import annotations

from genfair.models.cpu import cpu_flags, fast_bf16, resolve_dtype, resolve_engine

AMX = frozenset({"avx2", "avx512f", "amx_bf16", "amx_tile"})
EPYC = frozenset({"avx", "avx2", "fma", "f16c"})  # this project's machines


def test_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    )
    assert cpu_flags(str(info)) == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_flags(str(tmp_path / "absent")) == frozenset()


def test_auto_dtype_is_bf16_only_with_native_bf16_on_cpu():
    assert fast_bf16(AMX) and not fast_bf16(EPYC)
    assert resolve_dtype("auto", "cpu", AMX) == "bfloat16"
    assert resolve_dtype("auto", "cpu", EPYC) == "float32"
    assert resolve_dtype("auto", "cuda", AMX) == "float32"
    assert resolve_dtype("float32", "cpu", AMX) == "float32"  # an explicit setting wins
    assert resolve_dtype("bfloat16", "cpu", EPYC) == "bfloat16"


def test_auto_engine_is_transformers():
    assert resolve_engine("auto") == "transformers"
    assert resolve_engine("ctranslate2") == "ctranslate2"


def test_auto_settings_leave_the_model_config_hash_unchanged():
    """A config that does not set ``dtype`` / ``engine`` dumps (and hashes) as before they
    existed."""
    from genfair.models.config import EmbeddedModelConfig

    fields = {
        "backend": "embedded",
        "model_id": "m",
        "package": "p",
        "gguf_file": "f.gguf",
        "revision": "1",
    }
    assert "dtype" not in EmbeddedModelConfig(**fields).model_dump()
    assert "engine" not in EmbeddedModelConfig(**fields).model_dump(mode="json")
    assert EmbeddedModelConfig(**fields, dtype="float32").model_dump()["dtype"] == "float32"
    assert (
        EmbeddedModelConfig(**fields, engine="ctranslate2").model_dump()["engine"] == "ctranslate2"
    )
