"""Kernel display names: template arguments kept, return type and parameter list dropped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kerncast.analysis import demangle as demangle_mod
from kerncast.analysis.demangle import demangle, display_name


@pytest.fixture
def cxxfilt() -> str:
    found = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if found is None:
        pytest.skip("c++filt is not installed (binutils); demangling falls back to mangled names")
    return found


@pytest.mark.parametrize(("mangled", "shown"), [
    ("_Z13MatrixMulCUDAILi32EEvPfPKfS2_ii", "MatrixMulCUDA<32>"),
    ("_Z9vectorAddPKfS0_Pfi", "vectorAdd"),
    ("_ZN2ns2tkIfEEvPT_", "ns::tk<float>"),
    ("_ZN2ns1kILi3EEEvv", "ns::k<3>"),
    ("_Z1kIjEvv", "k<unsigned int>"),
    ("_Z3fooILb1EEvv", "foo<true>"),
    ("_Z1kIFviEEvPT_", "k<void (int)>"),
    ("_ZN12_GLOBAL__N_16kernelEv", "(anonymous namespace)::kernel"),
    ("_ZNK1A1fEv", "A::f"),
    ("_ZN1AclEv", "A::operator()"),
    ("_ZN1AplERKS_", "A::operator+"),
    ("_ZN1AltERKS_", "A::operator<"),
    ("_ZlsRSoRK1A", "operator<<"),
    ("_ZN1AcviEv", "A::operator int"),
    ("_ZN1AnwEm", "A::operator new"),
    ("_Z1kIXadL_ZN1AplERKS_EEEvv", "k<&A::operator+>"),
])
def test_demangled_display_names(cxxfilt: str, mangled: str, shown: str) -> None:
    assert demangle([mangled]) == {mangled: shown}


def test_extern_c_and_other_unmangled_names_are_unchanged() -> None:
    names = ["kc", "my_kernel", "_Zbogus_not_valid", "has space"]
    assert demangle(names) == {name: name for name in names}


def test_batch_with_duplicates_and_empty_input(cxxfilt: str) -> None:
    assert demangle([]) == {}
    result = demangle(["_Z9vectorAddPKfS0_Pfi", "kc", "_Z9vectorAddPKfS0_Pfi"])
    assert result == {"_Z9vectorAddPKfS0_Pfi": "vectorAdd", "kc": "kc"}


def test_missing_cxxfilt_falls_back_to_mangled_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no c++filt anywhere
    names = ["_Z15onlyInThisTestPf", "_ZN2ns12alsoUncachedEv"]
    assert demangle(names) == {name: name for name in names}


def test_failing_cxxfilt_falls_back_to_mangled_names(monkeypatch) -> None:
    if shutil.which("false") is None:
        pytest.skip("no `false` command to stand in for a failing c++filt")
    monkeypatch.setattr(demangle_mod, "_TOOLS", ("false",))
    name = "_Z18failingToolKernelv"
    assert demangle([name]) == {name: name}


@pytest.mark.parametrize(("signature", "shown"), [
    ("void MatrixMulCUDA<32>(float*, float const*, float const*, int, int)", "MatrixMulCUDA<32>"),
    ("vectorAdd(float const*, float const*, float*, int)", "vectorAdd"),
    ("unsigned int ns::count<unsigned int>(unsigned int)", "ns::count<unsigned int>"),
    ("(anonymous namespace)::kernel()", "(anonymous namespace)::kernel"),
    ("A::f() const", "A::f"),
    ("A::operator()()", "A::operator()"),
    ("operator<<(std::ostream&, A const&)", "operator<<"),
    ("void k<&(f(int))>()", "k<&(f(int))>"),
    ("void k<void (*)(int)>(void (*)(int))", "k<void (*)(int)>"),
    ("decltype (a+b) cuda::std::plus<void>::operator()<int&, int&>(int&, int&) const",
     "cuda::std::plus<void>::operator()<int&, int&>"),
    ("kc", "kc"),
])
def test_display_name_strips_signature(signature: str, shown: str) -> None:
    assert display_name(signature) == shown
