"""DRA selectors evaluate as in the Kubernetes CEL environment (a device as NVIDIA's driver publishes it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.scheduler.plugins.dynamicresources.cel import CelError, compile_selector, device_activation, evaluate

H100 = device_activation("gpu.nvidia.com", {
    "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
    "driverVersion": {"version": "570.133.20"}, "cudaComputeCapability": {"version": "9.0.0"},
    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:15"}, "numa": {"int": 1}, "mig": {"bool": False}},
    {"memory": {"value": "81559Mi"}})


def run(expression: str) -> bool:
    return evaluate(compile_selector(expression), H100)


@pytest.mark.parametrize("expression, expected", [
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", True),
    ("device.attributes['gpu.nvidia.com']['productName'].startsWith('NVIDIA H100')", True),
    ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:15'", True),
    ("device.attributes['gpu.nvidia.com'].numa == 1 && !device.attributes['gpu.nvidia.com'].mig", True),
    ("device.attributes['example.com'].size() == 0", True),  # an unknown domain is an empty map
    ("has(device.attributes['gpu.nvidia.com'].uuid)", False),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) < 0", True),  # 81559Mi < 80Gi
    ("device.capacity['gpu.nvidia.com'].memory == quantity('85520809984')", True),  # equal by value
    ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", True),
    ("quantity('1').add(2) == quantity('3') && quantity('1500m').sign() == 1", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion == semver('570.133.20')", True),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() == 9", True),
    ("semver('v9', true) == semver('9.0.0')", True),
])
def test_selectors_read_devices_as_the_scheduler_does(expression, expected):
    assert run(expression) is expected


@pytest.mark.parametrize("expression, error", [
    ("device.attributes['gpu.nvidia.com'].memoryClock > 1", "no such key: memoryClock"),
    ("device.attributes['gpu.nvidia.com'].driverVersion == '570.133.20'", "no such overload"),  # use semver()
    ("quantity('1.5').asInteger() == 1", "cannot convert value to integer"),
    ("device.driver", "CEL result of type StringType could not be converted to bool"),
])
def test_runtime_errors_are_errors_not_false(expression, error):
    with pytest.raises(CelError, match=f"^{error}$"):
        run(expression)


def test_a_version_attribute_that_is_no_semver_is_an_error():
    with pytest.raises(CelError, match="^attribute driverVersion: parse semantic version: "):
        device_activation("gpu.nvidia.com", {"driverVersion": {"version": "570"}}, {})


@pytest.mark.parametrize("expression, expected", [
    # cel.bind, as the DRA documentation writes it
    ("cel.bind(gpu, device.attributes['gpu.nvidia.com'], gpu.type == 'gpu' && gpu.numa == 1)", True),
    ("cel.bind(g, device.attributes['gpu.nvidia.com'], cel.bind(n, g.productName, n.endsWith('HBM3')))", True),
    # strings, version 2
    ("device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')", True),
    ("device.attributes['gpu.nvidia.com'].productName.upperAscii() == 'NVIDIA H100 80GB HBM3'", True),
    ("device.attributes['gpu.nvidia.com'].productName.split(' ')[1] == 'H100'", True),
    ("device.attributes['gpu.nvidia.com'].productName.split(' ', 2) == ['NVIDIA', 'H100 80GB HBM3']", True),
    ("device.attributes['gpu.nvidia.com'].productName.substring(7, 11) == 'H100'", True),
    ("device.attributes['gpu.nvidia.com'].productName.indexOf('H') == 7", True),
    ("device.attributes['gpu.nvidia.com'].productName.lastIndexOf('H') == 17", True),
    ("device.attributes['gpu.nvidia.com'].productName.charAt(0) == 'N'", True),
    ("device.attributes['gpu.nvidia.com'].productName.replace('NVIDIA ', '') == 'H100 80GB HBM3'", True),
    ("'  a '.trim() == 'a' && ['a', 'b'].join('-') == 'a-b' && strings.quote('a') == '\"a\"'", True),
    # regex, lists and sets
    ("device.attributes['gpu.nvidia.com'].productName.find('[0-9]+GB') == '80GB'", True),
    ("device.attributes['gpu.nvidia.com'].productName.findAll('[0-9]+') == ['100', '80', '3']", True),
    ("[1, 2, 3].sum() == 6 && [3, 1, 2].max() == 3 && [1, 2, 3].isSorted() && [1, 2, 1].lastIndexOf(1) == 2",
     True),
    ("sets.contains([0, 1, 2], [device.attributes['gpu.nvidia.com'].numa])", True),
    ("sets.intersects(['a'], ['b']) || sets.equivalent([1, 2], [2, 1, 1])", True),
    ("lists.range(3) == [0, 1, 2] && [3, 1].sort() == [1, 3] && [1, 1, 2].distinct() == [1, 2]", True),
    ("[[1], [2, [3]]].flatten() == [1, 2, [3]] && [1, 2, 3].slice(1, 3) == [2, 3]", True),
])
def test_the_kubernetes_cel_libraries_evaluate(expression, expected):
    assert run(expression) is expected


CAP = "device.capacity['gpu.nvidia.com'].memory"
VERSION = "device.attributes['gpu.nvidia.com'].driverVersion"


@pytest.mark.parametrize("expression, error", [
    # the scheduler's type checker refuses these before any device is read: a Quantity and a Semver
    # compare only through their methods (cel-python alone compared the strings: '80Gi' > '40Gi')
    (f"{CAP} > quantity('40Gi')", "1:42: found no matching overload for '_>_' applied to "
                                  "'(kubernetes.Quantity, kubernetes.Quantity)'"),
    (f"{CAP} <= quantity('90Gi')", "1:42: found no matching overload for '_<=_' applied to "
                                   "'(kubernetes.Quantity, kubernetes.Quantity)'"),
    (f"{CAP} == '81559Mi'", "1:42: found no matching overload for '_==_' applied to "
                            "'(kubernetes.Quantity, string)'"),
    (f"{CAP}.compareTo('40Gi') >= 0", "1:51: found no matching overload for 'compareTo' applied to "
                                      "'kubernetes.Quantity.(string)'"),
    (f"{CAP}.startsWith('8')", "1:52: found no matching overload for 'startsWith' applied to "
                               "'kubernetes.Quantity.(string)'"),
    (f"size({CAP}) > 0", "1:5: found no matching overload for 'size' applied to '(kubernetes.Quantity)'"),
    ("quantity('1') + quantity('2') == quantity('3')", "1:15: found no matching overload for '_+_' applied to "
                                                       "'(kubernetes.Quantity, kubernetes.Quantity)'"),
    # types known before the run: an operator needs an overload for exactly them (cel-python alone gave
    # `(1 == 'a') || true` true, matching every device)
    ("(1 == 'a') || true", "1:4: found no matching overload for '_==_' applied to '(int, string)'"),
    ("'a' || true", "1:5: found no matching overload for '_||_' applied to '(string, bool)'"),
    (f"{VERSION} > semver('550.0.0')", "1:51: found no matching overload for '_>_' applied to "
                                       "'(dyn, kubernetes.Semver)'"),
])
def test_what_the_type_checker_refuses_is_a_compile_error_where_it_points(expression, error):
    with pytest.raises(CelError) as refused:
        compile_selector(expression)
    first, source, caret = str(refused.value).split("\n")
    assert first == f"compilation failed: ERROR: <input>:{error}"
    column = int(error.split(":")[1])
    assert source == f" | {expression}" and caret == f" | {'.' * (column - 1)}^"


@pytest.mark.parametrize("expression", [
    f"{VERSION} > device.attributes['gpu.nvidia.com'].cudaComputeCapability",  # both dyn until run
    f"{VERSION}.startsWith('570')",
])
def test_a_semver_attribute_compared_as_a_string_is_no_such_overload_at_run_time(expression):
    with pytest.raises(CelError, match="^no such overload$"):
        run(expression)


@pytest.mark.parametrize("expression", ["ip('10.0.0.1').family() == 4",
                                        "device.attributes['gpu.nvidia.com'].all(k, v, k != '')"])
def test_what_gpufleet_does_not_evaluate_says_so(expression):
    with pytest.raises(CelError, match="not emulated by gpufleet"):
        compile_selector(expression)


_PIECES = ["device", ".", "attributes", "capacity", "driver", "['gpu.nvidia.com']", "['x']", ".productName",
           ".memory", ".numa", ".driverVersion", "quantity('40Gi')", "semver('1.0.0')", "'s'", "1", "-", "2.5",
           "true", " ", "(", ")", "[", "]", ",", "==", "!=", "<", ">=", "+", "*", "%", "&&", "||", "!", "?", ":",
           " in ", "size(", "cel.bind(g, ", "g", "sets.contains(", "lists.range(", ".lowerAscii()", ".split(",
           ".substring(", ".compareTo(", ".isGreaterThan(", ".sum()", ".max()", ".exists(k, ", ".all(k, ", "k",
           ".join(", ".find(", "strings.quote(", "ip(", ".add(", ".major()", "dyn("]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14))
def test_any_selector_compiles_and_runs_or_is_a_cel_error(pieces):
    # whatever a user writes: a program or a CEL error with the compiler's or the runtime's words, never a crash
    expression = "".join(pieces)
    try:
        compile_selector(expression)
    except CelError:
        return
    try:
        assert run(expression) in (True, False)
    except CelError as e:
        assert str(e)


_ATOMS = st.sampled_from(["device.driver", "device.attributes['gpu.nvidia.com'].productName",
                          "device.attributes['gpu.nvidia.com'].numa", "device.attributes['gpu.nvidia.com'].mig",
                          "device.attributes['gpu.nvidia.com'].driverVersion", "device.attributes['x'].y",
                          "device.capacity['gpu.nvidia.com'].memory", "quantity('40Gi')", "semver('9.0.0')",
                          "'H100'", "'a b'", "1", "0", "-3", "2.5", "true", "[1, 2]", "['a']", "g"])
_WELL_FORMED = st.recursive(_ATOMS, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["==", "!=", "<", ">=", "+", "-", "*", "%", "&&", "||", "in"]), inner)
    .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    st.tuples(inner, st.sampled_from(["lowerAscii()", "size()", "compareTo(quantity('1'))", "isGreaterThan({})",
                                      "startsWith('N')", "split(' ')", "substring(1)", "sum()", "max()",
                                      "major()", "asInteger()", "add(1)", "contains({})", "exists(v, v == {})",
                                      "join('-')", "indexOf({})", "matches('H1')"]), inner)
    .map(lambda t: f"{t[0]}.{t[1].format(t[2])}"),
    st.tuples(st.sampled_from(["size", "sets.contains", "lists.range", "string", "int", "dyn", "cel.bind(g, "]),
              inner, inner).map(lambda t: f"{t[0]}({t[1]})" if not t[0].startswith("cel") else
                                f"{t[0]}{t[1]}, {t[2]})"),
    st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
    inner.map(lambda e: f"!{e}")), max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(_WELL_FORMED)
def test_any_well_formed_selector_is_a_bool_or_a_cel_error(expression):
    try:
        compile_selector(expression)
    except CelError as e:
        assert str(e).startswith("compilation failed: ERROR: <input>:") and "\n | " in str(e)
        return
    try:
        assert run(expression) in (True, False)
    except CelError as e:
        assert str(e)


@pytest.mark.parametrize("expression", ["(" * 400 + "true" + ")" * 400, "[" * 5000, "!" * 3000 + "true",
                                        "-" * 3000 + "1 == 1", "(" * 240 + "true" + ")" * 240])
def test_a_deeply_nested_selector_is_a_cel_error_never_a_crash(expression):
    try:
        assert run(expression) is True
    except CelError as e:
        assert str(e)


def test_nesting_beyond_the_parsers_limit_is_its_error():
    with pytest.raises(CelError, match=r"^compilation failed: ERROR: <input>:1:1: expression recursion limit "
                                       r"exceeded: 250$"):
        compile_selector("(" * 251 + "true" + ")" * 251)
