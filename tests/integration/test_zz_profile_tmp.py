import collections, time, resource
import test_sentinel_batch_quarantine as t
from test_sentinel_batch_quarantine import k8s_emulator, k8s_emulator_factory  # noqa

def test_profile(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    faulty = names[:4]
    events = [t.alert(n, f"fp-{n}-{i}") for n in faulty for i in range(3)]
    variables = t.run_vars(emu, tmp_path, events, sentinel_circuit_breaker={"max_fraction": 1.0, "max_nodes": 3})
    for i in range(2):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.time()
        result = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        print("RUN", i, "wall", round(time.time()-t0,1), "cpu", round(r1.ru_utime-r0.ru_utime+r1.ru_stime-r0.ru_stime,1), "records", len(result.tasks))
